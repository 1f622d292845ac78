"""A dead node's restore of a bucket it never held: the new owner awaits the owner before it.

Seen in the nemesis (file seed 173, a full store): bucket ``b`` was n2's; n2 was stopped with SIGTERM
and, leaving, had to ship its WARC files to the full store before it could send ``b``'s hand-off. The
table gave ``b`` to n1, which was frozen (SIGSTOP) and declared dead; the next table gave ``b`` to n0,
awaiting n1. n1's checkpoints did not hold ``b`` (it never had its state), so the restore sent an empty
hand-off under n1's id, which released ``b`` at n0 empty: n0 fetched again a page it had fetched itself
before ``b`` first moved. n2's hand-off came 2.7 s later, merged, too late. Now the restore marks such a
hand-off *unheld* (the dead node's last manifest lists every bucket it held) and n0 awaits n2 instead.
"""

from __future__ import annotations

import pytest
from keeper_helpers import adopted, fetched_and_queued, lone_keeper, plain_frontier

from webgather.clock import FakeClock
from webgather.cluster.handoff import Awaiting
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.transport import UrlTransport
from webgather.cluster.wire import Handoff, decode, encode_handoff
from webgather.frontier.bucket import BucketState
from webgather.frontier.frontier import Frontier
from webgather.runtime.member.buckets import BucketKeeper

M = 16
BUCKET = 5


def _keeper(transport: UrlTransport, frontier: Frontier, owners: list[str]) -> BucketKeeper:
    """n0's keeper after the tables in which ``owners`` own the bucket in turn; n1 is dead."""
    return lone_keeper(adopted("n0", M, BUCKET, owners), transport, frontier, {"n0", "n2", "x"})


@pytest.mark.parametrize("owners", [["n2", "n1", "n0"], ["n2", "n1", "n1", "n0"]])
@pytest.mark.parametrize("order", ["restore first", "state first"])
async def test_an_unheld_restore_makes_the_new_owner_await_the_owner_before(order: str, owners: list[str]) -> None:
    """``owners``: the bucket's owner in each table n0 adopts; n1 may own it over two tables (file seed 25:
    a table for another node's death left it with n1, which still awaited it)."""
    source, _fetched, queued = fetched_and_queued(M, BUCKET)  # n2's state
    state = encode_handoff("n2", 5, source)
    unheld = encode_handoff("n1", 0, BucketState(BUCKET, M), unheld=True)
    hub = InProcessHub(M, FakeClock())
    transport = hub.transport("n0")
    frontier = plain_frontier(M)
    n0 = _keeper(transport, frontier, owners)
    assert n0.ownership.awaiting[BUCKET] == Awaiting("n1", float(len(owners)), earlier="n2")

    first, second = (unheld, state) if order == "restore first" else (state, unheld)
    await hub.transport("n1" if first is unheld else "n2").send(BUCKET, first)
    await n0.process(await transport.receive([BUCKET], 10, 0))
    assert not n0.ownership.is_ready(BUCKET), "released on an empty state: the fetched page comes again"
    await hub.transport("n2" if first is unheld else "n1").send(BUCKET, second)
    await n0.process(await transport.receive([BUCKET], 10, 0))

    assert n0.ownership.is_ready(BUCKET)
    assert n0.counts["relays_in"] == 1 and n0.counts["handoffs_in"] == 1
    assert frontier.queued == 1, "the page n2 had fetched was queued again"
    got, _ = frontier.next_ready(10.0)
    assert got is not None and got.url == queued.url
    assert await transport.pending_count(BUCKET) == 0


async def test_an_unheld_restore_releases_empty_where_the_owner_before_is_not_known() -> None:
    """n0 adopted no table in which another node owned the bucket before n1 (it skipped it, or it owned
    the bucket itself then): the restore is what there is, the bucket starts from it."""
    for owners in (["n1", "n0"], ["n0", "n1", "n0"]):
        hub = InProcessHub(M, FakeClock())
        transport = hub.transport("n0")
        n0 = _keeper(transport, plain_frontier(M), owners)
        await hub.transport("n1").send(BUCKET, encode_handoff("n1", 0, BucketState(BUCKET, M), unheld=True))
        await n0.process(await transport.receive([BUCKET], 10, 0))
        assert n0.ownership.is_ready(BUCKET) and n0.counts["relays_in"] == 0


def test_the_unheld_mark_travels_and_a_plain_hand_off_is_unchanged() -> None:
    marked = decode(encode_handoff("n1", 0, BucketState(BUCKET, M), unheld=True))
    plain = decode(encode_handoff("n1", 0, BucketState(BUCKET, M)))
    assert isinstance(marked, Handoff) and marked.unheld and not marked.relay and not marked.merge
    assert isinstance(plain, Handoff) and not plain.unheld


async def test_an_unheld_restore_among_claimed_deliveries_redirects_and_releases_nothing() -> None:
    """n0 awaits the bucket from n2 (the owner before it: n1); both are dead. n2's unheld restore is
    pending in the stream, claimed with the rest at a beat: it redirects the bucket to n1, and does not
    release it empty on the way (nemesis file seed 25); n1's restored state then does."""
    source, _fetched, _queued = fetched_and_queued(M, BUCKET)  # n1's state, restored from its checkpoint
    hub = InProcessHub(M, FakeClock())
    transport, frontier = hub.transport("n0"), plain_frontier(M)
    n0 = _keeper(transport, frontier, ["n1", "n2", "n0"])
    n0.members_alive({"n0", "x"})
    assert n0.ownership.awaiting[BUCKET] == Awaiting("n2", 3.0, earlier="n1")
    await hub.transport("r").send(BUCKET, encode_handoff("n2", 0, BucketState(BUCKET, M), unheld=True))
    assert len(await hub.transport("gone").receive([BUCKET], 10, 0)) == 1  # pending, its reader dead
    await n0.claim_from_gone()
    assert not n0.ownership.is_ready(BUCKET), "released on an empty state: the fetched page comes again"
    assert n0.ownership.awaiting[BUCKET].expected == "n1"
    await hub.transport("r").send(BUCKET, encode_handoff("n1", 0, source))
    await n0.process(await transport.receive([BUCKET], 10, 0))
    assert n0.ownership.is_ready(BUCKET) and frontier.queued == 1
