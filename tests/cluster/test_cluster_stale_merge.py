"""A restarted node's stored state of a bucket it does not own is merged into the bucket's state, never
taken for it.

Seen in the nemesis (file seed 18): n0, the first node, was stopped 3 s into the crawl and restarted 7 s
later with the same ``--out``; meanwhile its buckets had been restored at n1 and n2 from its checkpoint and
crawled on. Back, n0 adopted a table in which it owned nothing and sent what its disk still held of those
buckets (merge hand-offs, ``hand_over(merge=True)``). At that moment j1 joined and awaited n1's hand-off of
buckets 50 and 53; n1's hand-off reached the streams first but n1 read it back and forwarded it, so n0's
stale state came before it. j1 did not know n0 yet (not among the members it had last seen alive), took it
for a dead node's state, released the buckets with it and queued its 29 URLs; n1's state came next and was
merged: its seen keys cannot unqueue what is queued. j1 fetched again the 38 pages n1 had fetched.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from webgather.clock import FakeClock
from webgather.cluster.handoff import Action, Awaiting, Ownership, releases
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of, initial, plan_join
from webgather.cluster.transport import Delivery
from webgather.cluster.wire import Handoff, decode, encode_handoff
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.bucket import BucketState
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.member.buckets import BucketKeeper
from webgather.urls import fingerprint

M = 16


def _frontier() -> Frontier:
    return Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=0.5), n_buckets=M)


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


def _state(bucket: int, queued: list[CrawlItem], fetched: list[CrawlItem]) -> BucketState:
    """A bucket's state at a node that fetched ``fetched`` and has ``queued`` still queued."""
    frontier = _frontier()
    frontier.add([*fetched, *queued], 0.0)
    for n, item in enumerate(fetched):
        taken, _ = frontier.next_ready(1.0 + n)
        assert taken is not None and taken.url == item.url
        frontier.complete(taken, 1.0 + n)
    return frontier.export_bucket(bucket)


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("n0_seen_alive", [False, True])
async def test_a_restarted_nodes_stale_state_does_not_release_a_bucket(n0_seen_alive: bool, merge: bool) -> None:
    """j1 joins (v2) and awaits bucket ``b`` from n1. In the stream: n0's stale state (two pages
    queued), then n1's state (both fetched, a third page queued). Only the third page is queued at j1.
    ``merge``: what a restarted n0 found stored; else a dead n0's state re-sent under its id by the
    coordinator's recovery (nemesis s3 seed 1084): older than what n1, alive, holds and sends."""
    v1 = initial(["n1"], M)
    v2 = plan_join(v1, "j1")
    bucket = next(b for b in range(M) if v2.owners[b] == "j1")
    host = next(f"h{i}.test" for i in range(10_000) if bucket_of(f"h{i}.test", M) == bucket)
    first, second, third = (_item(f"http://{host}/{p}") for p in ("", "a", "b"))
    hub = InProcessHub(M, FakeClock())
    stale = encode_handoff("n0", 14, _state(bucket, [first, second], []), merge=merge)
    await hub.transport("n0").send(bucket, stale)

    ownership = Ownership("j1")
    ownership.adopt(v1, 0.0)
    ownership.adopt(v2, 1.0)
    assert ownership.awaiting[bucket].expected == "n1"
    frontier = _frontier()
    transport = hub.transport("j1")
    crawl = SimpleNamespace(add_local=frontier.add, adopt_hosts=lambda hosts: list(hosts))
    keeper = BucketKeeper(SimpleNamespace(frontier=frontier, clock=FakeClock()),  # type: ignore[arg-type]
                          crawl, ownership, transport, None,  # type: ignore[arg-type]
                          claim_idle_s=60.0, receive_block_s=0.0)
    keeper.members_alive({"j1", "n1", "n0"} if n0_seen_alive else {"j1", "n1"})
    await keeper.process(await transport.receive([bucket], 10, 0))
    assert not ownership.is_ready(bucket), "released on n0's stale state: it would fetch what n1 had fetched"
    await hub.transport("n1").send(bucket, encode_handoff("n1", 11, _state(bucket, [third], [first, second])))
    await keeper.process(await transport.receive([bucket], 10, 0))

    assert ownership.is_ready(bucket)
    assert keeper.counts["handoffs_in"] == 1 and keeper.counts["handoffs_merged"] == 1
    assert frontier.queued == 1, "pages n1 had fetched were queued again from n0's stale state"
    taken, _ = frontier.next_ready(10.0)
    assert taken is not None and taken.url == third.url
    assert frontier.add([first, second, third], 11.0) == []
    assert await transport.pending_count(bucket) == 0


def test_a_merge_state_releases_only_from_the_expected_sender() -> None:
    """The node the table says held the bucket may send what it stored (it came back under its id before
    anyone else took the bucket): that is the bucket's state. From another node, only a merge."""
    waiting = Awaiting("n1", 0.0)
    assert releases(waiting, "n1", {"j1"}, merge=True)
    assert not releases(waiting, "n0", {"j1"}, merge=True)
    assert releases(waiting, "n0", {"j1"})  # a dead node's state re-sent under its id (a restore) does
    assert not releases(waiting, "n0", {"j1", "n0"})
    assert not releases(waiting, "n0", {"j1", "n1"})  # ... but not while the expected sender lives
    own = Ownership("j1")
    own.adopt(initial(["n1"], M), 0.0)
    own.adopt(plan_join(initial(["n1"], M), "j1"), 1.0)
    bucket = min(own.awaiting)
    assert own.classify(Delivery(bucket, "1-0", b""), "n0", {"j1"}, merge=True) is Action.HOLD
    assert own.classify(Delivery(bucket, "2-0", b""), "n1", {"j1"}, merge=True) is Action.RELEASE


def test_the_merge_mark_travels_and_a_plain_hand_off_is_unchanged() -> None:
    state = _state(3, [_item("http://x.test/a")], [_item("http://x.test/")])
    plain = encode_handoff("n0", 7, state)
    marked = encode_handoff("n0", 7, state, merge=True)
    assert plain[3] == 2 and marked[3] == 4  # a plain one stays type 2, what older nodes read
    got, back = decode(marked), decode(plain)
    assert isinstance(got, Handoff) and isinstance(back, Handoff)
    assert got.merge and not back.merge
    assert got.state.items == back.state.items and list(got.state.seen_keys) == list(back.state.seen_keys)
