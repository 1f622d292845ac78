"""A dead node's state directory out of reach and no shared store: a loss only if the node had acked.

Before its first ack every URL a node holds is also in a stream (unacked deliveries are claimed by the
takers), so a node killed in its first instants (SIGTERM at start, kill -9 right after a join) loses
nothing; the keeper raises ``holding_key(node)`` before that first ack, and recovery counts
``unrecoverable_buckets`` only for a node that did. Before: every such bucket counted, and every node
said DATA LOST and exited 4 with nothing missing.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from webgather.clock import FakeClock
from webgather.cluster.inprocess import InProcessHub
from webgather.config import CrawlConfig
from webgather.frontier.frontier import Frontier
from webgather.runtime.durability.recovery import holding_key, recover_node
from webgather.runtime.member.buckets import BucketKeeper

M = 16


async def _recover(hub: InProcessHub, tmp_path: Path) -> dict[str, Any]:
    return await recover_node("dead", (1, 2), nodes_dir=tmp_path / "nodes", config=CrawlConfig(),
                              frontier_cls=Frontier, transport=hub.transport("r"), coordinator=hub.coordinator())


async def test_a_dead_node_that_never_acked_lost_nothing(tmp_path: Path) -> None:
    hub = InProcessHub(M, FakeClock())
    done = await _recover(hub, tmp_path)
    counters = await hub.coordinator().counters()
    assert done == {"node": "dead", "restored_from_streams": 2}
    assert counters.get("unrecoverable_buckets", 0) == 0 and counters["restored_from_streams"] == 2
    assert len(await hub.transport("new").receive([1, 2], 10, 0)) == 2  # the takers are released


async def test_a_dead_node_that_had_acked_is_a_loss(tmp_path: Path) -> None:
    hub = InProcessHub(M, FakeClock())
    await hub.coordinator().incr(holding_key("dead"))
    done = await _recover(hub, tmp_path)
    assert done == {"node": "dead", "unrecoverable_buckets": 2}
    assert (await hub.coordinator().counters())["unrecoverable_buckets"] == 2


async def test_the_keeper_marks_the_node_once_before_its_first_ack() -> None:
    hub = InProcessHub(M, FakeClock())
    order: list[str] = []

    class Transport:
        async def ack(self, bucket: int, ids: list[str]) -> int:
            order.append(f"ack {bucket}")
            return len(ids)

    async def mark() -> None:
        order.append("mark")
        await hub.coordinator().incr(holding_key("n"))

    parts = SimpleNamespace(frontier=SimpleNamespace(flush=lambda: order.append("flush")), clock=FakeClock())
    ownership = SimpleNamespace(node="n")
    keeper = BucketKeeper(parts, SimpleNamespace(), ownership, Transport(), SimpleNamespace(),  # type: ignore[arg-type]
                          claim_idle_s=1.0, receive_block_s=0.1, before_first_ack=mark)
    await keeper._ack({})  # nothing to ack: no mark
    assert order == []
    await keeper._ack({3: ["1-0"]})
    await keeper._ack({4: ["2-0"]})
    assert order == ["mark", "flush", "ack 3", "flush", "ack 4"]
    assert (await hub.coordinator().counters())[holding_key("n")] == 1
