"""A bucket lost while still awaited: its new owner awaits the state the old one was awaiting.

y awaits bucket ``b`` from x (table v2) and holds a link sent to it; before x's hand-off comes, table v3
gives ``b`` to z. y passes the link on and tells z whose hand-off to await (a relay). Before, y sent an
empty hand-off under its own name: z, awaiting y, released the bucket with it and queued the link,
whose page x had fetched; x's state came after it, merged, and could not unqueue it.
"""

from __future__ import annotations

import pytest
from keeper_helpers import adopted, fetched_and_queued, lone_keeper, one_bucket_table, plain_frontier

from webgather.clock import FakeClock
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import BucketTable
from webgather.cluster.transport import UrlTransport
from webgather.cluster.wire import Handoff, decode, encode_batch, encode_handoff
from webgather.frontier.frontier import Frontier
from webgather.runtime.member.buckets import BucketKeeper

M = 16
BUCKET = 3


def _table(version: int, owner: str) -> BucketTable:
    return one_bucket_table(version, M, BUCKET, owner)


def _keeper(node: str, transport: UrlTransport, frontier: Frontier) -> BucketKeeper:
    return lone_keeper(adopted(node, M, BUCKET, ["x", "y"]), transport, frontier, {"x", "y", "z"})


@pytest.mark.parametrize("order", ["relay first", "state first"])
async def test_a_bucket_lost_while_awaited_is_released_by_the_state_it_awaited(order: str) -> None:
    source, fetched, queued = fetched_and_queued(M, BUCKET)  # x's state
    state = encode_handoff("x", 5, source)
    hub = InProcessHub(M, FakeClock())
    y_transport, z_transport = hub.transport("y"), hub.transport("z")
    y = _keeper("y", y_transport, plain_frontier(M))
    assert y.ownership.awaiting[BUCKET].expected == "x"
    await hub.transport("w").send(BUCKET, encode_batch("w", 1, [fetched]))  # a link to x's fetched page
    await y.process(await y_transport.receive([BUCKET], 10, 0))
    assert y.ownership.awaiting[BUCKET].held
    if order == "state first":
        await hub.transport("x").send(BUCKET, state)
    await y.on_transition(y.ownership.adopt(_table(3, "z"), 2.0))  # lost while awaited: gives it up
    assert BUCKET not in y.ownership.awaiting and not y.ownership.is_ready(BUCKET)
    if order == "relay first":
        await hub.transport("x").send(BUCKET, state)

    frontier = plain_frontier(M)
    z = _keeper("z", z_transport, frontier)
    z.ownership.adopt(_table(3, "z"), 2.0)
    assert z.ownership.awaiting[BUCKET].expected == "y"
    await z.process(await z_transport.receive([BUCKET], 10, 0))
    assert z.ownership.is_ready(BUCKET)
    assert frontier.queued == 1, "the page x had fetched was queued again"
    assert z.counts["relays_in"] == 1 and z.counts["handoffs_in"] == 1
    got, _ = frontier.next_ready(10.0)
    assert got is not None and got.url == queued.url
    assert await z_transport.pending_count(BUCKET) == 0


def test_a_relay_names_the_awaited_node() -> None:
    source = plain_frontier(M)
    message = decode(encode_handoff("y", 2, source.export_bucket(BUCKET), relay="x"))
    assert isinstance(message, Handoff) and message.relay == "x" and not message.state.items
    assert not message.merge
