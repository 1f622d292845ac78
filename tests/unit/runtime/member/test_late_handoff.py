"""Hand-offs held up (the WARCs could not be shipped: a full store) while the table moved on: a bucket won
back keeps its state at the node that owns it again, and a state that reaches the new owner after the
URL batches of its bucket unqueues what it had fetched (nemesis file seed 103)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import SimpleNamespace

from webgather.clock import FakeClock
from webgather.cluster.handoff import Ownership
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of, initial, plan_join, plan_leave
from webgather.cluster.wire import encode_batch, encode_handoff
from webgather.frontier.bucket import BucketState
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.member.buckets import BucketKeeper
from webgather.urls import fingerprint

M = 16


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


def _frontier() -> Frontier:
    return Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=0.5), n_buckets=M)


def _fetched_one(frontier: Frontier, fetched: CrawlItem, queued: CrawlItem) -> None:
    frontier.add([fetched], 0.0)
    taken, _ = frontier.next_ready(0.0)
    assert taken is not None
    frontier.complete(taken, 0.1)
    frontier.add([queued], 0.1)


async def test_a_bucket_won_back_while_its_handoff_waits_keeps_its_seen_keys() -> None:
    """Seen in the nemesis (file seed 103): n0 lost the bucket of h0004 to n1 (a join) while the shared
    store was full, so its hand-off waited to ship n0's WARC files. n1 was killed; the next table gave the
    bucket back to n0. Once the store had room n0 sent the state it had exported and dropped it, though
    the bucket was its own again; the URL batches of the stream, applied to the emptied bucket, queued
    pages n0 had fetched in the crawl's first seconds (fetched again 26-29 s later), and its own state,
    read back from the stream, came after them."""
    v1 = initial(["n0"], M)
    v2 = plan_join(v1, "n1")
    v3 = plan_leave(v2, "n1")
    bucket = next(b for b in range(M) if v2.owners[b] == "n1" and v3.owners[b] == "n0")
    host = next(f"h{i}.test" for i in range(10_000) if bucket_of(f"h{i}.test", M) == bucket)
    fetched, queued = _item(f"http://{host}/"), _item(f"http://{host}/p/1")
    clock = FakeClock()
    frontier = _frontier()
    _fetched_one(frontier, fetched, queued)

    hub = InProcessHub(M, clock)
    transport = hub.transport("n0")
    ownership = Ownership("n0")
    ownership.adopt(v1, 0.0)
    store_back = asyncio.Event()

    async def ship(_buckets: Sequence[int]) -> None:
        await store_back.wait()

    forgotten: set[str] = set()
    crawl = SimpleNamespace(add_local=frontier.add, adopt_hosts=lambda hosts: list(hosts),
                            forget_hosts=forgotten.update, robots_busy=set())
    parts = SimpleNamespace(frontier=frontier, clock=clock, cookies=None,
                            robots_store=SimpleNamespace(get=lambda host, wall: None))
    keeper = BucketKeeper(parts, crawl, ownership, transport, None,  # type: ignore[arg-type]
                          claim_idle_s=5.0, receive_block_s=0.0, before_send=ship)
    keeper.alive = {"n0"}
    assert ownership.adopt(v2, 1.0).lost
    handing = asyncio.create_task(keeper.hand_over(sorted(ownership.leaving)))
    for _ in range(100):
        await asyncio.sleep(0)
    assert not handing.done(), "the hand-off waits for the store"
    assert not ownership.adopt(v3, 2.0).gained, "won back: still its state, nothing awaited"
    await hub.transport("n2").send(bucket, encode_batch("n2", 1, [fetched]))  # a link to the page it fetched
    store_back.set()
    await asyncio.wait_for(handing, 5.0)

    assert ownership.is_ready(bucket)
    await keeper.process(await transport.receive([bucket], 10, 0))
    state = frontier.export_bucket(bucket)
    assert [item.url for item in state.items] == [queued.url], "a page the node had fetched was queued again"
    assert keeper.counts["handoffs_out"] == 0, "a bucket won back is not sent"
    assert host not in forgotten, "its host's robots state stays"
    item, _ = frontier.next_ready(10.0)
    assert item is not None and item.url == queued.url, "the won-back host stays held"


async def test_a_state_that_comes_after_the_bucket_was_released_unqueues_what_it_fetched() -> None:
    """Seen in the nemesis (file seed 103, the bucket of h0009): n0 lost it to n1 (a join) while the store
    was full, and its hand-off waited to ship its WARCs. n1 was killed with its disk before any checkpoint;
    the next table gave the bucket to n2, and n1's state was restored from the streams: an empty hand-off.
    n2 released the bucket on it and applied the URL batches n1 had not acked, links to pages n0 had
    fetched; n0's state came 2.6 s later, merged after them."""
    v1 = initial(["n0", "n2"], M)
    v2 = plan_join(v1, "n1")
    v3 = plan_leave(v2, "n1")
    bucket = next(b for b in range(M) if (v1.owners[b], v2.owners[b], v3.owners[b]) == ("n0", "n1", "n2"))
    host = next(f"h{i}.test" for i in range(10_000) if bucket_of(f"h{i}.test", M) == bucket)
    fetched, queued = _item(f"http://{host}/"), _item(f"http://{host}/p/1")
    giver = _frontier()
    _fetched_one(giver, fetched, queued)

    hub = InProcessHub(M, FakeClock())
    await hub.transport("n0").send(bucket, encode_batch("n0", 1, [fetched]))  # n1 never acked it
    await hub.transport("n0").send(bucket, encode_handoff("n1", 0, BucketState(bucket, M)))  # restored: empty

    ownership = Ownership("n2")
    for version, table in enumerate((v1, v2, v3)):
        ownership.adopt(table, float(version))
    assert ownership.awaiting[bucket].expected == "n1"
    frontier = _frontier()
    crawl = SimpleNamespace(add_local=frontier.add, adopt_hosts=lambda hosts: list(hosts))
    parts = SimpleNamespace(frontier=frontier, clock=FakeClock(), cookies=None,
                            robots_store=SimpleNamespace(get=lambda host, wall: None, put=lambda *a: None))
    transport = hub.transport("n2")
    keeper = BucketKeeper(parts, crawl, ownership, transport, None,  # type: ignore[arg-type]
                          claim_idle_s=5.0, receive_block_s=0.0)
    keeper.alive = {"n0", "n2"}
    await keeper.process(await transport.receive([bucket], 10, 0))
    assert ownership.is_ready(bucket)
    await hub.transport("n0").send(bucket, encode_handoff("n0", 2, giver.export_bucket(bucket)))  # late
    await keeper.process(await transport.receive([bucket], 10, 0))
    assert [item.url for item in frontier.export_bucket(bucket).items] == [queued.url], \
        "a page the late state had fetched stayed queued"
    assert await transport.pending_count(bucket) == 0
