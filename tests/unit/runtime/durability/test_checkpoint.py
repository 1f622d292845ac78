"""Bucket checkpoints: the snapshot (items in flight count as queued), the held acks, the order
snapshot -> put -> ack, and the restore of a dead node's buckets from the shared store."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of
from webgather.cluster.wire import Handoff, decode, encode_batch, encode_handoff
from webgather.config import CrawlConfig, FrontierConfig, PolitenessConfig
from webgather.errors import StoreError
from webgather.fetch.cookies import CrawlCookies
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.durability.checkpoint import Checkpointer, HeldAcks, checkpoint_key, manifest_key, snapshot_bucket
from webgather.clock import FakeClock
from webgather.runtime.durability.restore import restore_from_store
from webgather.runtime.engine.robots_store import RobotsStore
from webgather.store.shared import FileStore
from webgather.urls import fingerprint

M = 64
HOST = "a.test"
BUCKET = bucket_of(HOST, M)
assert BUCKET not in (5, 6)


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


def _frontier() -> Frontier:
    f = Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=1.0), n_buckets=M)
    f.add([_item(f"http://{HOST}/{i}") for i in range(3)], 0.0)
    return f


def test_a_snapshot_queues_the_items_in_flight_and_bounds_a_held_hosts_wait() -> None:
    f = _frontier()
    taken, _ = f.next_ready(0.0)
    assert taken is not None
    assert taken not in f.export_bucket(BUCKET).items  # a hand-off export leaves it out...
    f.defer_host(HOST, math.inf)  # held, as during a hand-off
    state = snapshot_bucket(f, BUCKET, {HOST: [f.flying[taken.fp]]}, 2.5)
    assert sorted(i.url for i in state.items) == [f"http://{HOST}/{i}" for i in range(3)]  # ...a checkpoint does not
    assert [c.wait_s for c in state.hosts] == [2.5]
    f.complete(taken, 1.0)
    assert f.flying == {}
    f.close()


async def test_held_acks_reach_the_stream_only_when_the_checkpoint_acks_them() -> None:
    hub = InProcessHub(M, FakeClock())
    held = HeldAcks(hub.transport("n"))
    await held.send(BUCKET, encode_batch("x", 1, [_item(f"http://{HOST}/9")]))
    got = await held.receive([BUCKET], 10, 0)
    assert await held.ack(BUCKET, [got[0].delivery_id]) == 1
    assert await held.pending_count(BUCKET) == 1  # still in the stream
    taken = held.take()
    assert taken == {BUCKET: [got[0].delivery_id]} and held.take() == {}
    held.give_back(taken)
    assert held.take() == taken
    await held.inner.ack(BUCKET, taken[BUCKET])
    assert await held.pending_count(BUCKET) == 0


class _FailingStore(FileStore):
    def put_bytes(self, key: str, data: bytes) -> None:
        raise StoreError("store down")


def _fake_node(frontier: Frontier, transport: Any, out: Path) -> Any:
    async def rotate() -> tuple[list[str], int]:
        return [], 0

    parts = SimpleNamespace(frontier=frontier, writer=SimpleNamespace(rotate=rotate), clock=FakeClock(),
                            config=CrawlConfig(), out_dir=out, robots_store=RobotsStore.open(out / "state"),
                            cookies=CrawlCookies())
    acks = HeldAcks(transport)  # as a ClusterNode with a shared store builds its keeper: acking through it
    keeper = SimpleNamespace(transport=acks, lock=asyncio.Lock(), rows=None)
    ownership = SimpleNamespace(ready={BUCKET}, leaving=set(), version=7)
    gave_up: list[str] = []
    return SimpleNamespace(parts=parts, keeper=keeper, ownership=ownership, node_id="n", idle=lambda: True,
                           acks=acks, gave_up=gave_up,
                           give_up=lambda exc, reason: gave_up.append(f"{reason}: {exc}"))


async def test_a_checkpoint_puts_the_buckets_then_acks_and_a_failed_one_acks_nothing(tmp_path: Path) -> None:
    hub = InProcessHub(M, FakeClock())
    frontier = _frontier()
    in_flight, _ = frontier.next_ready(0.0)
    node = _fake_node(frontier, hub.transport("n"), tmp_path / "out")
    await node.keeper.transport.send(BUCKET, encode_batch("x", 1, [_item(f"http://{HOST}/0")]))
    delivery = (await node.keeper.transport.receive([BUCKET], 10, 0))[0]
    failing = Checkpointer(node, _FailingStore(tmp_path / "down"), node.acks)
    await node.keeper.transport.ack(BUCKET, [delivery.delivery_id])  # the receive loop's ack: held
    assert await failing.checkpoint() is False
    assert await hub.transport("n").pending_count(BUCKET) == 1  # kept for the next checkpoint
    failing.close()
    store = FileStore(tmp_path / "shared")
    good = Checkpointer(node, store, node.acks)  # the node's held acks: the ids failing kept are there
    assert await good.checkpoint() is True
    assert await hub.transport("n").pending_count(BUCKET) == 0
    message = decode(store.get_bytes(checkpoint_key("n", BUCKET)) or b"")
    assert isinstance(message, Handoff) and message.sender == "n" and message.seq == 7
    assert in_flight is not None and in_flight.url in {i.url for i in message.state.items}
    assert len(message.state.items) == 3 and len(message.state.seen_keys) == 3
    manifest = json.loads(store.get_bytes(manifest_key("n")) or b"")
    assert manifest["buckets"] == [BUCKET] and manifest["held"] == [BUCKET]
    good.close()
    frontier.close()


async def test_a_checkpoint_carries_its_hosts_rules_and_cookies_and_a_restore_sends_them(tmp_path: Path) -> None:
    hub = InProcessHub(M, FakeClock())
    frontier = _frontier()
    node = _fake_node(frontier, hub.transport("n"), tmp_path / "out")
    parts = node.parts
    parts.robots_store.put(HOST, parts.clock.wall() + 600.0, b"D")
    parts.cookies.store(f"http://{HOST}/", (("Set-Cookie", "sid=1; Path=/"),))
    store = FileStore(tmp_path / "shared")
    checkpoints = Checkpointer(node, store, node.acks)
    assert await checkpoints.checkpoint() is True
    parts.clock.advance(100.0)  # the node dies; its bucket is restored 100 s after the checkpoint
    await restore_from_store("n", (BUCKET,), store_url=store.url, n_buckets=M, transport=hub.transport("r"),
                             coordinator=hub.coordinator())
    sent = decode((await hub.transport("new").receive([BUCKET], 10, 0))[0].payload)
    assert isinstance(sent, Handoff) and [s.host for s in sent.state.settled] == [HOST]
    settled = sent.state.settled[0]
    assert (settled.robots, settled.robots_ttl_s) == (b"D", 600.0) and b"sid" in settled.cookies
    assert parts.clock.wall() - sent.state.settled_wall == 100.0  # the new owner keeps the rule 500 s more
    checkpoints.close()
    parts.robots_store.close()
    frontier.close()


class _BrokenTransport:
    """A stream transport whose ack fails with what redis-py raised on a connection Redis dropped."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def ack(self, bucket: int, delivery_ids: Any) -> int:
        raise RuntimeError("unable to perform operation on <TCPTransport closed=True>; the handler is closed")


async def test_a_checkpoint_loop_that_dies_stops_the_node_rather_than_hold_its_acks_forever(tmp_path: Path) -> None:
    """Nemesis seed 1: a checkpoint's ack raised during a Redis kill, the loop ended unseen, the
    node's acks stayed held and the crawl never ended (every node up 90 s after the last fault)."""
    hub = InProcessHub(M, FakeClock())
    frontier = _frontier()
    node = _fake_node(frontier, _BrokenTransport(hub.transport("n")), tmp_path / "out")
    checkpoints = Checkpointer(node, FileStore(tmp_path / "shared"), node.acks)
    checkpoints.every_s = 0.0
    await node.keeper.transport.send(BUCKET, encode_batch("x", 1, [_item(f"http://{HOST}/0")]))
    delivery = (await node.keeper.transport.receive([BUCKET], 10, 0))[0]
    await node.keeper.transport.ack(BUCKET, [delivery.delivery_id])  # held for the next checkpoint
    await asyncio.wait_for(checkpoints.run(), 10)  # it ends: the node was told to stop
    assert len(node.gave_up) == 1 and "checkpoints stopped" in node.gave_up[0]
    assert "RuntimeError" in node.gave_up[0]
    checkpoints.close()
    frontier.close()


async def test_restore_sends_each_checkpoint_or_an_empty_handoff(tmp_path: Path) -> None:
    hub = InProcessHub(M, FakeClock())
    store = FileStore(tmp_path / "shared")
    frontier = _frontier()
    store.put_bytes(checkpoint_key("d", BUCKET), encode_handoff("d", 3, frontier.export_bucket(BUCKET)))
    store.put_bytes(checkpoint_key("d", 5), b"garbage")
    store.put_bytes(manifest_key("d"), json.dumps({"node": "d", "version": 3, "buckets": [BUCKET, 5]}).encode())
    other = 6
    done = await restore_from_store("d", (BUCKET, 5, other), store_url=store.url, n_buckets=M,
                                    transport=hub.transport("r"), coordinator=hub.coordinator())
    assert done["restored_buckets"] == 1 and done["items"] == 3 and done["unrecoverable_buckets"] == 1
    reader = hub.transport("new")
    sent = {d.bucket: decode(d.payload) for d in await reader.receive([BUCKET, 5, other], 10, 0)}
    assert all(isinstance(m, Handoff) and m.sender == "d" for m in sent.values())
    assert len(sent[BUCKET].state.items) == 3  # type: ignore[union-attr]
    assert not sent[5].state.items and len(sent[5].state.seen_keys) == 0  # type: ignore[union-attr]
    assert not sent[other].state.items  # type: ignore[union-attr]
    counters = await hub.coordinator().counters()
    assert counters["restored_buckets"] == 1 and counters["unrecoverable_buckets"] == 1
    frontier.close()


@pytest.mark.parametrize("listed_held", [True, False])
async def test_a_restore_marks_the_buckets_the_dead_node_did_not_hold(tmp_path: Path, listed_held: bool) -> None:
    """Bucket 5 held and empty (no checkpoint of its own), bucket 6 not held at all (gained in a table
    the node never released it in): only 6's empty hand-off is marked unheld, and only when the
    manifest says what was held (an older one without ``held``: nothing is marked)."""
    hub = InProcessHub(M, FakeClock())
    store = FileStore(tmp_path / "shared")
    manifest: dict[str, object] = {"node": "d", "version": 3, "buckets": []}
    if listed_held:
        manifest["held"] = [5]
    store.put_bytes(manifest_key("d"), json.dumps(manifest).encode())
    await restore_from_store("d", (5, 6), store_url=store.url, n_buckets=M,
                             transport=hub.transport("r"), coordinator=hub.coordinator())
    sent = {d.bucket: decode(d.payload) for d in await hub.transport("new").receive([5, 6], 10, 0)}
    assert all(isinstance(m, Handoff) and m.sender == "d" and not m.state.items for m in sent.values())
    assert not sent[5].unheld  # type: ignore[union-attr]
    assert sent[6].unheld is listed_held  # type: ignore[union-attr]


async def test_restore_before_any_checkpoint_is_no_loss(tmp_path: Path) -> None:
    """A node that never checkpointed acked nothing: its streams hold all it had. Empty hand-offs
    release its buckets behind those entries, and no loss is counted."""
    hub = InProcessHub(M, FakeClock())
    store = FileStore(tmp_path / "shared")
    done = await restore_from_store("d", (1, 2), store_url=store.url, n_buckets=M,
                                    transport=hub.transport("r"), coordinator=hub.coordinator())
    assert "unrecoverable_buckets" not in done and done["buckets"] == 2
    counters = await hub.coordinator().counters()
    assert counters.get("unrecoverable_buckets", 0) == 0 and counters["restored_from_streams"] == 2
    assert len(await hub.transport("new").receive([1, 2], 10, 0)) == 2


@pytest.mark.parametrize("url", ["file://host/x", "ftp://x"])
async def test_restore_from_a_bad_url_is_a_config_error(url: str) -> None:
    from webgather.errors import ConfigError

    hub = InProcessHub(M, FakeClock())
    with pytest.raises(ConfigError):
        await restore_from_store("d", (1,), store_url=url, n_buckets=M, transport=hub.transport("r"),
                                 coordinator=hub.coordinator())


async def test_after_a_leave_every_held_ack_goes_out_and_the_manifest_holds_nothing(tmp_path: Path) -> None:
    """A manifest still listing the buckets handed over stood for their state if the node came back
    under its id and died before its first checkpoint (nemesis file seed 25): the restore sent the old
    states. After the leave a restore of them is *unheld*: their new owner awaits the owner before."""
    hub = InProcessHub(M, FakeClock())
    node = _fake_node(_frontier(), hub.transport("n"), tmp_path / "out")
    store = FileStore(tmp_path / "shared")
    checkpoints = Checkpointer(node, store, node.acks)
    assert await checkpoints.checkpoint() is True
    assert json.loads(store.get_bytes(manifest_key("n")) or b"")["held"] == [BUCKET]
    await node.keeper.transport.send(BUCKET, encode_batch("x", 1, [_item(f"http://{HOST}/0")]))
    delivery = (await node.keeper.transport.receive([BUCKET], 10, 0))[0]
    await node.keeper.transport.ack(BUCKET, [delivery.delivery_id])
    assert await hub.transport("n").pending_count(BUCKET) == 1
    node.ownership.ready = set()  # every bucket handed over
    await checkpoints.left()
    assert await hub.transport("n").pending_count(BUCKET) == 0
    manifest = json.loads(store.get_bytes(manifest_key("n")) or b"")
    assert manifest["held"] == [] and manifest["buckets"] == []
    await restore_from_store("n", (BUCKET,), store_url=store.url, n_buckets=M, transport=hub.transport("r"),
                             coordinator=hub.coordinator())
    sent = decode((await hub.transport("new").receive([BUCKET], 10, 0))[0].payload)
    assert isinstance(sent, Handoff) and sent.unheld and not sent.state.items
    checkpoints.close()
    node.parts.frontier.close()


async def test_a_handoff_waits_for_its_warcs_to_reach_the_store(tmp_path: Path) -> None:
    calls: list[int] = []

    async def rotate() -> tuple[list[str], int]:
        calls.append(1)
        if len(calls) < 3:
            raise StoreError("store down")
        return [], 0

    node = _fake_node(_frontier(), InProcessHub(M, FakeClock()).transport("n"), tmp_path / "out")
    node.parts.writer.rotate = rotate
    checkpoints = Checkpointer(node, FileStore(tmp_path / "shared"), node.acks)
    await asyncio.wait_for(checkpoints.ship_retrying([BUCKET]), 5.0)  # a ClusterNode's keeper's before_send
    assert len(calls) == 3 and checkpoints.counts["ship_retries"] == 2
    checkpoints.close()
    node.parts.frontier.close()
