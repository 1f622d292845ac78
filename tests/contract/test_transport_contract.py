"""The cluster transport and coordinator contract, run over every backend.

``inprocess`` runs on a FakeClock (``advance`` moves it); ``redis`` runs on one
embedded redis-server per module, flushed before each test, where expiry and
idle times are the server's, so ``advance`` really sleeps (short times).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pytest

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import initial, plan_join
from webgather.cluster.redis import RedisBackend
from webgather.cluster.transport import Backend, Coordinator, UrlTransport
from webgather.cluster.wire import Handoff, decode, encode_handoff
from webgather.errors import ClusterError, IncompatibleCrawl
from webgather.frontier.bucket import BucketState, HostClock
from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import seen_key
from webgather.clock import FakeClock
from webgather.urls import fingerprint

from process_helpers import own_redis_servers

N_BUCKETS = 64


@dataclass
class Harness:
    backend: Backend
    advance: Callable[[float], Awaitable[None]]
    other: Callable[[], Awaitable[Backend]]
    """A second connection to the same crawl (the same hub in-process)."""

    def node(self, name: str) -> UrlTransport:
        return self.backend.transport(name)

    @property
    def coord(self) -> Coordinator:
        return self.backend.coordinator()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    with server:
        yield server
    assert server.pid is None
    assert own_redis_servers() == []


@pytest.fixture(params=["inprocess", "redis"])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    if request.param == "inprocess":
        clock = FakeClock()
        hub = InProcessHub(N_BUCKETS, clock)

        async def advance_fake(seconds: float) -> None:
            clock.advance(seconds)

        async def same_hub() -> Backend:
            return hub

        yield Harness(hub, advance_fake, same_hub)
        return
    server: EmbeddedRedis = request.getfixturevalue("redis_server")
    opened: list[RedisBackend] = []

    async def connect() -> Backend:
        opened.append(await RedisBackend.connect(server.url, "contract", N_BUCKETS))
        return opened[-1]

    first = await connect()
    assert isinstance(first, RedisBackend)
    await first.client.flushdb()
    try:
        yield Harness(first, asyncio.sleep, connect)
    finally:
        for backend in opened:
            await backend.aclose()


# -- transport ---------------------------------------------------------------------------


async def test_send_receive_ack(harness: Harness) -> None:
    a, b = harness.node("a"), harness.node("b")
    ids = [await a.send(5, payload) for payload in (b"one", b"two", b"three")]
    assert len(set(ids)) == 3
    assert await b.pending_count(5) == 3
    await a.send(6, b"four")
    assert await b.pending_total(range(N_BUCKETS)) == 4 and await b.pending_total([6]) == 1
    assert await b.pending_total([]) == 0
    await b.ack(6, [d.delivery_id for d in await b.receive([6], 10, 0)])
    got = await b.receive([5], 10, 0)
    assert [(d.bucket, d.delivery_id, d.payload) for d in got] == list(zip([5] * 3, ids, [b"one", b"two", b"three"]))
    assert await b.receive([5], 10, 0) == []  # pending, not re-delivered by receive
    assert await b.ack(5, ids[:2]) == 2
    assert await b.pending_count(5) == 1
    assert await b.ack(5, ids[:2] + ["no-such-id", "1-1"]) == 0
    assert await b.ack(5, [ids[2]]) == 1
    assert await b.pending_count(5) == 0


async def test_ack_of_a_never_delivered_payload_does_nothing(harness: Harness) -> None:
    a = harness.node("a")
    sent = await a.send(1, b"x")
    assert await a.ack(1, [sent]) == 0
    assert [d.payload for d in await a.receive([1], 5, 0)] == [b"x"]


async def test_max_batches_bounds_a_receive_and_nothing_is_lost(harness: Harness) -> None:
    a, b = harness.node("a"), harness.node("b")
    sent = {(bucket, await a.send(bucket, f"{bucket}-{i}".encode())) for bucket in (2, 3) for i in range(5)}
    seen: list[tuple[int, str]] = []
    for _ in range(10):
        got = await b.receive([2, 3], 3, 0)
        assert len(got) <= 3
        seen += [(d.bucket, d.delivery_id) for d in got]
    assert sorted(seen) == sorted(sent)
    per_bucket = [d for d in seen if d[0] == 2]
    assert len(per_bucket) == 5


async def test_payloads_of_one_bucket_arrive_in_send_order(harness: Harness) -> None:
    a = harness.node("a")
    payloads = [bytes([i]) * (i + 1) for i in range(20)]
    for p in payloads:
        await a.send(9, p)
    got: list[bytes] = []
    while len(got) < 20:
        got += [d.payload for d in await a.receive([9], 7, 0)]
    assert got == payloads


async def test_no_delivery_of_other_buckets(harness: Harness) -> None:
    a, b = harness.node("a"), harness.node("b")
    await a.send(1, b"for-1")
    await a.send(2, b"for-2")
    got = await b.receive([2, 3], 10, 0)
    assert [(d.bucket, d.payload) for d in got] == [(2, b"for-2")]
    assert await b.claim_stale([1], 0) == []  # bucket 1 untouched: nothing delivered
    assert [(d.bucket, d.payload) for d in await a.receive([1, 2], 10, 0)] == [(1, b"for-1")]


async def test_payload_bytes_survive_exactly(harness: Harness) -> None:
    a = harness.node("a")
    payload = bytes(range(256)) * 40
    await a.send(0, payload)
    await a.send(0, b"")
    assert [d.payload for d in await a.receive([0], 5, 0)] == [payload, b""]


async def test_unacked_batch_is_redelivered_by_claim_stale_after_min_idle(harness: Harness) -> None:
    a, b = harness.node("a"), harness.node("b")
    sent = await a.send(4, b"batch")
    await a.send(6, b"never read")
    (first,) = await a.receive([4], 5, 0)  # a reads, then "dies" without acking
    assert await b.claim_stale([4, 6], 0.5) == []  # not idle long enough
    await harness.advance(0.6)
    (again,) = await b.claim_stale([4, 6], 0.5)
    assert (again.bucket, again.delivery_id, again.payload) == (4, sent, b"batch") == (4, first.delivery_id, b"batch")
    assert await b.claim_stale([4], 0.5) == []  # claiming restarts the idle time
    assert await b.ack(4, [again.delivery_id]) == 1
    await harness.advance(0.1)
    assert await b.claim_stale([4, 6], 0.0) == []
    assert [d.payload for d in await b.receive([6], 5, 0)] == [b"never read"]


async def test_claim_stale_takes_over_own_pending_after_restart(harness: Harness) -> None:
    await harness.node("a").send(7, b"p")
    await harness.node("a").receive([7], 5, 0)
    restarted = harness.node("a")
    assert [d.payload for d in await restarted.claim_stale([7], 0.0)] == [b"p"]


async def test_claim_stale_honours_max_batches(harness: Harness) -> None:
    a, b = harness.node("a"), harness.node("b")
    for i in range(6):
        await a.send(8, bytes([i]))
    assert len(await a.receive([8], 10, 0)) == 6
    await harness.advance(0.6)
    first = await b.claim_stale([8], 0.5, max_batches=4)
    rest = await b.claim_stale([8], 0.5, max_batches=4)  # the first 4 are no longer idle
    assert len(first) == 4 and len(rest) == 2
    assert len({d.delivery_id for d in first + rest}) == 6


async def test_requeue_sends_a_dead_readers_deliveries_again_and_leaves_the_others(harness: Harness) -> None:
    a, b, c = harness.node("a"), harness.node("b"), harness.node("c")
    for payload in (b"one", b"two", b"three"):
        await a.send(5, payload)
    read_by_b = await b.receive([5], 2, 0)
    (read_by_c,) = await c.receive([5], 5, 0)  # read dry: nothing fresh is left in bucket 5
    await a.send(6, b"six")
    assert [d.payload for d in read_by_b] == [b"one", b"two"] and read_by_c.payload == b"three"
    assert await a.requeue("b", []) == 0
    assert await a.requeue("b", [5, 6, 7]) == 2
    assert await a.pending_total([5]) == 3  # each payload is in the stream once
    got = await c.receive([5], 10, 0)  # as new payloads, whoever reads the bucket gets them
    assert [d.payload for d in got] == [b"one", b"two"]
    assert not {d.delivery_id for d in got} & {d.delivery_id for d in read_by_b}
    assert await b.ack(5, [d.delivery_id for d in read_by_b]) == 0  # the old deliveries are gone
    assert await a.requeue("b", [5]) == 0 and await a.requeue("a", [5]) == 0
    assert await c.ack(5, [read_by_c.delivery_id, *(d.delivery_id for d in got)]) == 3
    assert [d.payload for d in await b.receive([6], 5, 0)] == [b"six"]  # another bucket: untouched


async def test_requeue_wakes_a_blocked_receive(harness: Harness) -> None:
    a, b = harness.node("a"), harness.node("b")
    await a.send(13, b"p")
    assert len(await a.receive([13], 5, 0)) == 1

    async def requeue_soon() -> None:
        await asyncio.sleep(0.05)
        await b.requeue("a", [13])

    task = asyncio.ensure_future(requeue_soon())
    got = await b.receive([13], 5, 3.0)
    await task
    assert [d.payload for d in got] == [b"p"]


async def test_receive_blocks_until_a_send(harness: Harness) -> None:
    a, b = harness.node("a"), harness.node("b")
    assert await b.receive([11], 5, 0.05) == []

    async def send_soon() -> None:
        await asyncio.sleep(0.05)
        await a.send(12, b"other bucket")
        await asyncio.sleep(0.05)
        await a.send(11, b"late")

    sender = asyncio.ensure_future(send_soon())
    got = await b.receive([11], 5, 3.0)
    await sender
    assert [d.payload for d in got] == [b"late"]


async def test_bad_arguments_are_cluster_errors(harness: Harness) -> None:
    a = harness.node("a")
    for call in (
        lambda: a.send(N_BUCKETS, b"x"),
        lambda: a.send(-1, b"x"),
        lambda: a.send(0, "text"),  # type: ignore[arg-type]
        lambda: a.receive([0, N_BUCKETS], 1, 0),
        lambda: a.receive([0], 0, 0),
        lambda: a.receive([0], 1, -1),
        lambda: a.ack(N_BUCKETS, []),
        lambda: a.ack(0, "1-1"),
        lambda: a.ack(0, [1]),  # type: ignore[list-item]
        lambda: a.receive(3, 1, 0),  # type: ignore[arg-type]
        lambda: a.claim_stale(["0"], 0),  # type: ignore[list-item]
        lambda: a.claim_stale([0], float("nan")),
        lambda: a.pending_count(10**6),
        lambda: a.pending_total([0, 10**6]),
        lambda: harness.coord.heartbeat("n", {}, 0),
        lambda: harness.coord.heartbeat("n", {"x": object()}, 1),
        lambda: harness.coord.heartbeat("n", [1, 2], 1),  # type: ignore[arg-type]
        lambda: harness.coord.register_crawl({1: "x"}),  # type: ignore[dict-item]
        lambda: harness.coord.cas_table(None, "table"),  # type: ignore[arg-type]
        lambda: harness.coord.try_lease("n", -1),
        lambda: harness.coord.incr("", 1),
        lambda: harness.coord.register_crawl({"n_buckets": float("nan")}),
    ):
        with pytest.raises(ClusterError):
            await call()
    with pytest.raises(ClusterError):
        harness.backend.transport("")


async def test_a_handoff_message_travels_whole(harness: Harness) -> None:
    bucket = 13
    items = tuple(CrawlItem(u, fingerprint(u), 3, 1, 2, 0.5, "page") for u in ("http://h.test/a", "http://h.test/b"))
    keys = np.array([seen_key(bucket, 5), seen_key(bucket, 9)], dtype=np.uint64)
    state = BucketState(bucket, N_BUCKETS, items, keys, (HostClock("h.test", 1.5, 2.0, 1, None, 7),))
    await harness.node("old").send(bucket, encode_handoff("old", 1, state))
    (delivery,) = await harness.node("new").receive([bucket], 5, 0)
    message = decode(delivery.payload)
    assert isinstance(message, Handoff) and message.state.items == items
    assert message.state.seen_keys.tolist() == state.seen_keys.tolist()


# -- coordinator -------------------------------------------------------------------------


async def test_table_cas_exactly_one_of_concurrent_writers_wins(harness: Harness) -> None:
    other = await harness.other()
    coords = [harness.coord, other.coordinator()]
    assert await coords[0].get_table() is None
    candidates = [initial([f"n{i}", "m"], N_BUCKETS) for i in range(8)]
    results = await asyncio.gather(*(coords[i % 2].cas_table(None, t) for i, t in enumerate(candidates)))
    assert sum(results) == 1
    winner = candidates[results.index(True)]
    assert await coords[0].get_table() == winner == await coords[1].get_table()
    joined = [plan_join(winner, f"x{i}") for i in range(6)]
    results = await asyncio.gather(*(coords[i % 2].cas_table(0, t) for i, t in enumerate(joined)))
    assert sum(results) == 1
    assert await coords[1].get_table() == joined[results.index(True)]
    assert await coords[0].cas_table(0, plan_join(winner, "late")) is False
    assert await coords[0].cas_table(None, winner) is False


async def test_table_cas_rejects_malformed_updates(harness: Harness) -> None:
    table = initial(["a", "b"], N_BUCKETS)
    assert await harness.coord.cas_table(None, table)
    with pytest.raises(ClusterError):
        await harness.coord.cas_table(0, table)  # version must increase
    with pytest.raises(ClusterError):
        await harness.coord.cas_table(0, plan_join(initial(["a"], N_BUCKETS * 2), "b"))
    assert await harness.coord.get_table() == table


async def test_heartbeat_expiry_removes_a_member(harness: Harness) -> None:
    c = harness.coord
    await c.heartbeat("a", {"pid": 1, "host": "x"}, 0.5)
    await c.heartbeat("b", {"pid": 2}, 10.0)
    assert await c.members() == {"a": {"pid": 1, "host": "x"}, "b": {"pid": 2}}
    await harness.advance(0.2)
    await c.heartbeat("a", {"pid": 1, "host": "y"}, 0.5)  # renewal
    await harness.advance(0.35)
    assert await c.members() == {"a": {"pid": 1, "host": "y"}, "b": {"pid": 2}}
    await harness.advance(0.3)
    assert await c.members() == {"b": {"pid": 2}}
    await c.leave("b")
    assert await c.members() == {}


async def test_lease_is_exclusive_until_it_expires(harness: Harness) -> None:
    c = harness.coord
    assert await c.try_lease("a", 0.5)
    assert not await c.try_lease("b", 0.5)
    assert await c.try_lease("a", 0.5)  # renewal by the holder
    await harness.advance(0.6)
    assert await c.try_lease("b", 5.0)  # takeover after expiry
    assert not await c.try_lease("a", 5.0)
    await c.leave("b")  # leaving releases it
    assert await c.try_lease("a", 5.0)


async def test_register_crawl_first_wins_then_mismatch_is_named(harness: Harness) -> None:
    c = harness.coord
    settings = {"n_buckets": 64, "crawl": "c1", "scope": {"hosts": ["a", "b"]}}
    assert await c.register_crawl(settings) == settings
    assert await (await harness.other()).coordinator().register_crawl(dict(reversed(settings.items()))) == settings
    with pytest.raises(IncompatibleCrawl, match="n_buckets") as info:
        await c.register_crawl({**settings, "n_buckets": 4096})
    assert "scope" not in str(info.value)
    with pytest.raises(IncompatibleCrawl, match="extra"):
        await c.register_crawl({**settings, "extra": 1})


async def test_counters_add_up_across_connections(harness: Harness) -> None:
    c, d = harness.coord, (await harness.other()).coordinator()
    assert await c.counters() == {}
    assert await c.incr("pages") == 1
    assert await d.incr("pages", 41) == 42
    await asyncio.gather(*(d.incr("bytes", 10) for _ in range(20)))
    assert await c.incr("errors", -2) == -2
    assert await c.counters() == {"bytes": 200, "errors": -2, "pages": 42}



async def test_addresses_first_published_wins_for_every_connection(harness: Harness) -> None:
    c, d = harness.coord, (await harness.other()).coordinator()
    assert await c.get_addresses() == {} and await c.get_addresses(["a.test"]) == {}
    assert await c.publish_addresses({"a.test": "127.0.0.1", "b.test": ""}) == {"a.test": "127.0.0.1", "b.test": ""}
    # another node's resolver disagrees: it gets the stored answers, and adds only what is new
    assert await d.publish_addresses({"a.test": "127.0.0.9", "c.test": "::1"}) == {"a.test": "127.0.0.1",
                                                                                 "c.test": "::1"}
    assert await d.get_addresses(["c.test", "a.test", "zz.test"]) == {"a.test": "127.0.0.1", "c.test": "::1"}
    assert await c.get_addresses() == {"a.test": "127.0.0.1", "b.test": "", "c.test": "::1"}
    assert await c.publish_addresses({}) == {}


async def test_concurrent_publishers_of_one_host_all_get_the_same_answer(harness: Harness) -> None:
    conns = [harness.coord, *[(await harness.other()).coordinator() for _ in range(3)]]
    answers = await asyncio.gather(*(conn.publish_addresses({f"h{i}.test": f"127.0.0.{n}" for i in range(1500)})
                                     for n, conn in enumerate(conns)))
    assert all(answer == answers[0] for answer in answers)
    assert len(await harness.coord.get_addresses()) == 1500  # more than one chunk of the Redis backend


async def test_bad_address_arguments_are_cluster_errors(harness: Harness) -> None:
    c = harness.coord
    for bad in ({"": "1.2.3.4"}, {"a": 5}, ["a"], "a"):
        with pytest.raises(ClusterError):
            await c.publish_addresses(bad)  # type: ignore[arg-type]
    for hosts in ("a.test", [""], [3]):
        with pytest.raises(ClusterError):
            await c.get_addresses(hosts)  # type: ignore[arg-type]


async def test_permits_are_never_taken_past_the_limit(harness: Harness) -> None:
    c, d = harness.coord, (await harness.other()).coordinator()
    assert await c.take_permits("permits", 10, 4) == 4
    assert await d.take_permits("permits", 10, 4) == 4
    assert await c.take_permits("permits", 10, 4) == 2  # only what is left
    assert await d.take_permits("permits", 10, 1) == 0
    assert await c.incr("permits", -3) == 7  # given back
    taken = await asyncio.gather(*(conn.take_permits("permits", 10, 2) for conn in (c, d) * 4))
    assert sum(taken) == 3 and (await c.counters())["permits"] == 10
    for bad in ((" ", 0, 0), ("", 10, 1), ("p", 10, 0), ("p", 1.5, 1)):
        with pytest.raises(ClusterError):
            await c.take_permits(*bad)  # type: ignore[arg-type]
