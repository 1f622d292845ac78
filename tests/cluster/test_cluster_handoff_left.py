"""A node that leaves gracefully may leave its own hand-off pending under its name: the taker finds it.

Seen in the join/leave test of ``test_cluster_processes`` under load (``DATA LOST: buckets_started_empty``
after a graceful leave, nothing lost): x1 adopted the table without it, exported its 17 buckets and sent
their hand-offs; a receive it had begun with its old bucket list was woken by those sends and read all 17
back (one consumer group: the read makes them x1's pending deliveries). x1 forwarded 4 of them, then
stopped ("left") before passing on the other 13. The takers awaited them until ``handoff_timeout_s``, then
started the buckets "empty": the claim at that release brought x1's hand-offs, merged at once, so
nothing was lost, but 13 buckets were counted as started empty and every node exited 4.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from webgather.clock import FakeClock
from webgather.cluster.handoff import Ownership
from webgather.cluster.inprocess import InProcessCoordinator, InProcessHub
from webgather.cluster.mapping import bucket_of, initial, plan_leave
from webgather.cluster.wire import encode_batch, encode_handoff
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.durability.losses import release_overdue
from webgather.runtime.member.buckets import BucketKeeper
from webgather.urls import fingerprint

M = 16
TIMEOUT_S = 5.0


def _frontier() -> Frontier:
    return Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=0.5), n_buckets=M)


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


class _Taker:
    """w0, which takes bucket ``bucket`` from x1 when x1 leaves (table v2), with its receive loop's steps."""

    def __init__(self, hub: InProcessHub, bucket: int, transition_at: float) -> None:
        v1 = initial(["w0", "x1"], M)
        self.ownership = Ownership("w0")
        self.ownership.adopt(v1, 0.0)
        self.transition = self.ownership.adopt(plan_leave(v1, "x1"), transition_at)
        assert self.ownership.awaiting[bucket].expected == "x1"
        self.frontier = _frontier()
        crawl = SimpleNamespace(add_local=self.frontier.add, adopt_hosts=lambda hosts: list(hosts))
        self.transport = hub.transport("w0")
        self.keeper = BucketKeeper(SimpleNamespace(frontier=self.frontier, clock=FakeClock()),  # type: ignore[arg-type]
                                   crawl, self.ownership, self.transport, None,  # type: ignore[arg-type]
                                   claim_idle_s=60.0, receive_block_s=0.0)
        self.bucket = bucket

    async def receive(self) -> None:
        await self.keeper.process(await self.transport.receive([self.bucket], 10, 0))


async def _setup(handed_over: bool, read_back: bool = True) -> tuple[_Taker, InProcessCoordinator, list[CrawlItem]]:
    """x1 owned ``bucket`` (a queued page, a fetched one); if ``handed_over``, it sent its hand-off (and
    read it back before it left if ``read_back``). w0 adopted v2 while x1 was alive, then read a link sent
    to the bucket since (its receive loop saw nothing else of the bucket before x1 left)."""
    v1 = initial(["w0", "x1"], M)
    bucket = next(b for b in range(M) if v1.owners[b] == "x1" and plan_leave(v1, "x1").owners[b] == "w0")
    hosts = [f"h{i}.test" for i in range(10_000) if bucket_of(f"h{i}.test", M) == bucket][:2]
    queued, fetched, linked = _item(f"http://{hosts[0]}/a"), _item(f"http://{hosts[0]}/"), _item(f"http://{hosts[1]}/")
    hub = InProcessHub(M, FakeClock())
    giver = hub.transport("x1")
    if handed_over:
        state = _frontier()
        state.add([fetched, queued], 0.0)
        taken, _ = state.next_ready(0.0)
        assert taken is not None and taken.url == fetched.url
        state.complete(taken, 1.0)
        handoff = encode_handoff("x1", 1, state.export_bucket(bucket))
    taker = _Taker(hub, bucket, transition_at=1.0)
    taker.keeper.members_alive({"w0", "x1"})
    await taker.keeper.on_transition(taker.transition)  # x1 alive: nothing to claim yet
    await hub.transport("w1").send(bucket, encode_batch("w1", 1, [linked]))
    await taker.receive()  # the link is held behind the awaited hand-off
    if handed_over:
        await giver.send(bucket, handoff)
        if read_back:
            assert len(await giver.receive([bucket], 10, 0)) == 1  # its old receive read it back; left unacked
    assert not taker.ownership.is_ready(bucket) and taker.ownership.awaiting[bucket].held
    taker.keeper.members_alive({"w0"})  # x1 left the membership
    return taker, hub.coordinator(), [fetched, queued, linked]


@pytest.mark.parametrize("found_at", ["next beat", "hand-off timeout", "hand-off timeout, never delivered"])
async def test_the_hand_off_a_leaver_read_back_releases_its_bucket_and_is_no_loss(found_at: str) -> None:
    """Never delivered: the taker's receive loop, starved (a loaded machine), had not read it yet."""
    taker, coordinator, items = await _setup(handed_over=True, read_back="never" not in found_at)
    bucket, keeper = taker.bucket, taker.keeper
    if found_at == "next beat":  # what the beat does first: claim what a sender that left holds
        await keeper.claim_from_gone()
        assert taker.ownership.is_ready(bucket), "waited for a hand-off that was pending under the leaver's name"
    due = bucket in taker.ownership.overdue(1.0 + TIMEOUT_S, TIMEOUT_S, keeper.alive)  # x1's other buckets too
    assert due == found_at.startswith("hand-off timeout")
    await release_overdue(keeper, coordinator, [bucket] if due else [])
    assert taker.ownership.is_ready(bucket)
    assert (await coordinator.counters()).get("buckets_started_empty", 0) == 0
    assert keeper.counts["handoff_timeouts"] == 0 and keeper.counts["handoffs_in"] == 1
    assert taker.frontier.queued == 2  # x1's queued page and the held link; the fetched page is seen, not queued
    assert taker.frontier.add(items, 2.0) == []  # all three seen here
    assert await taker.transport.pending_count(bucket) == 0


async def test_a_hand_off_that_is_nowhere_is_still_a_counted_loss() -> None:
    taker, coordinator, _items = await _setup(handed_over=False)
    await taker.keeper.claim_from_gone()
    assert not taker.ownership.is_ready(taker.bucket)
    assert taker.bucket in taker.ownership.overdue(1.0 + TIMEOUT_S, TIMEOUT_S, taker.keeper.alive)
    await release_overdue(taker.keeper, coordinator, [taker.bucket])
    assert taker.ownership.is_ready(taker.bucket) and taker.frontier.queued == 1  # started empty, the link applied
    assert (await coordinator.counters())["buckets_started_empty"] == 1
