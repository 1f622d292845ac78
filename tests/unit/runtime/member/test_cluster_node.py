"""A cluster node's own logic (``runtime.member.node.ClusterNode``) over the in-process backend:
how it is built (keeper, checkpoints, gate), its end (done, last node leaving), idle, giving up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import BucketTable, bucket_of, initial
from webgather.cluster.wire import encode_batch
from webgather.config import ClusterConfig, CrawlConfig
from webgather.errors import CannotContinue, HandoffAbandoned, StoreError
from webgather.frontier.model import CrawlItem
from webgather.runtime.engine.parts import NodeParts, open_parts
from webgather.runtime.launch.cluster import start_crawl
from webgather.runtime.member.figures import node_info, node_summary
from webgather.runtime.member.node import ClusterNode
from webgather.store.shared import FileStore
from webgather.urls import fingerprint

M = 8
HOST = "a.test"
BUCKET = bucket_of(HOST, M)
CONFIG = CrawlConfig(cluster=ClusterConfig(n_buckets=M, heartbeat_s=0.05, member_ttl_s=1.0, lease_margin_s=0.25))


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[NodeParts]:
    async with open_parts(CONFIG, tmp_path / "nodes" / "a", node_id="a", n_buckets=M) as opened:
        yield opened


async def _until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.01)


async def _delivered(hub: InProcessHub, node: ClusterNode) -> int:
    """A batch of one URL sent to the node's bucket and applied by its keeper; the stream's pending count."""
    await hub.transport("x").send(BUCKET, encode_batch("x", 1, [_item(f"http://{HOST}/1")]))
    await node.keeper.process(await node.keeper.transport.receive([BUCKET], 10, 0))
    return await hub.transport("x").pending_count(BUCKET)


async def test_a_lone_node_with_nothing_to_crawl_ends_done_and_leaves_the_membership(
        tmp_path: Path, parts: NodeParts) -> None:
    hub = InProcessHub(M)
    await start_crawl(hub, CONFIG, [], nodes=["a"])
    node = ClusterNode(parts, hub, nodes_dir=tmp_path / "nodes")
    summary = await asyncio.wait_for(node.run(), 20.0)
    assert summary["end"] == "done" and summary["finished"] is True and summary["node"] == "a"
    assert node.ownership.ready == set(range(M))  # the version-0 table gave it every bucket
    assert "a" not in await hub.coordinator().members()
    assert summary["fence"]["fenced"] == 0 and summary["adoptions"][0][1] == 0


async def test_the_last_node_told_to_leave_stops_and_says_it_was_leaving(tmp_path: Path, parts: NodeParts) -> None:
    hub = InProcessHub(M)
    await start_crawl(hub, CONFIG, [], nodes=["a"])
    node = ClusterNode(parts, hub, nodes_dir=tmp_path / "nodes")
    assert not node.leaving
    node.leave()
    assert node.leaving and node_info(node, {})["leaving"] is True
    summary = await asyncio.wait_for(node.run(), 20.0)
    assert summary["end"] == "stopped: last node"  # nobody to hand its buckets to: its state is kept
    members = await hub.coordinator().members()
    assert members["a"]["leaving"] is True  # still a member (its key expires): it did not leave the crawl


async def test_without_a_shared_store_the_keeper_acks_what_it_applied_at_once(tmp_path: Path,
                                                                             parts: NodeParts) -> None:
    hub = InProcessHub(M)
    node = ClusterNode(parts, hub, nodes_dir=tmp_path / "nodes")
    node.ownership.adopt(initial(["a"], M), 0.0)
    assert node.checkpoints is None and node.keeper.before_send is None
    assert await _delivered(hub, node) == 0
    assert node.parts.frontier.pending() == 1 and not node.idle()  # the URL is queued: work to do


async def test_with_a_shared_store_the_keeper_acks_only_through_a_checkpoint(tmp_path: Path,
                                                                            parts: NodeParts) -> None:
    hub = InProcessHub(M)
    store = FileStore(tmp_path / "shared")
    node = ClusterNode(parts, hub, nodes_dir=tmp_path / "nodes", store=store)
    node.ownership.adopt(initial(["a"], M), 0.0)
    assert node.checkpoints is not None and node.keeper.before_send is not None
    assert await _delivered(hub, node) == 1  # applied, on disk, but its ack waits for the checkpoint
    assert await node.checkpoints.checkpoint()
    assert await hub.transport("x").pending_count(BUCKET) == 0
    assert any(key.startswith("checkpoints/a/") for key in store.list())
    await node.keeper.before_send([BUCKET])  # before a hand-off: the WARC files are shipped (no failure)
    node.checkpoints.close()


class _DownStore(FileStore):
    def list(self, prefix: str = "") -> list[str]:
        raise StoreError("store down")


async def test_a_hand_off_waiting_for_a_store_the_node_gave_up_on_is_abandoned(tmp_path: Path,
                                                                            parts: NodeParts) -> None:
    """It used to raise the store's CannotContinue out of the node's task group: a traceback and exit 1
    (a nemesis schedule: the S3 store down past max_outage_s while a table change asked for a hand-off)."""
    node = ClusterNode(parts, InProcessHub(M), nodes_dir=tmp_path / "nodes", store=_DownStore(tmp_path / "shared"))
    node.ownership.adopt(initial(["a"], M), 0.0)
    assert node.keeper.before_send is not None
    node.give_up(CannotContinue("store away"), "shared store unusable")  # the watch loop's enforcement
    with pytest.raises(HandoffAbandoned):
        await asyncio.wait_for(node.keeper.before_send([BUCKET]), 10.0)
    assert node.reason == "shared store unusable" and str(node.failure) == "store away"


async def test_a_hand_off_waiting_for_the_store_when_the_node_closes_is_abandoned(tmp_path: Path,
                                                                               parts: NodeParts) -> None:
    node = ClusterNode(parts, InProcessHub(M), nodes_dir=tmp_path / "nodes", store=_DownStore(tmp_path / "shared"))
    assert node.keeper.before_send is not None and node.checkpoints is not None
    waiting = asyncio.ensure_future(node.keeper.before_send([BUCKET]))  # retrying while the store is down
    await asyncio.sleep(0.3)
    assert not waiting.done()
    node.checkpoints.close()
    with pytest.raises(HandoffAbandoned):
        await asyncio.wait_for(waiting, 10.0)
    assert node.failure is None  # closing is not giving up


async def test_with_a_store_a_bucket_awaited_long_past_the_timeout_from_a_gone_node_is_restored_not_lost(
        tmp_path: Path) -> None:
    """After a Redis outage longer than handoff_timeout_s every awaited bucket is late at the first beat,
    before its gone sender has been missing for grace_s: it was started empty and counted as a loss
    (DATA LOST with nothing lost; a nemesis schedule: a node killed with its disk, then Redis killed)."""
    shared = tmp_path / "shared"
    config = CrawlConfig(cluster=ClusterConfig(n_buckets=M, heartbeat_s=0.05, member_ttl_s=1.0, lease_margin_s=0.25,
                                               handoff_timeout_s=1.0, shared_store=shared.as_uri()))
    hub = InProcessHub(M)
    await start_crawl(hub, config, [], nodes=["x", "a"])
    first = await hub.coordinator().get_table()
    assert first is not None and first.buckets_of("x")
    async with open_parts(config, tmp_path / "nodes" / "a", node_id="a", n_buckets=M) as parts:
        node = ClusterNode(parts, hub, nodes_dir=tmp_path / "nodes", store=FileStore(shared))
        node.ownership.adopt(first, 0.0)
        now = parts.clock.monotonic()
        node.ownership.adopt(BucketTable(1, M, ("a",) * M), now - 100.0)  # x's buckets awaited for 100 s
        taken = sorted(node.ownership.awaiting)
        assert taken == sorted(first.buckets_of("x"))
        await node._beat()  # x never beat: gone; its hand-offs 99 s late
        await asyncio.sleep(node.coordinating.grace_s)
        await node._beat()
        counters = await hub.coordinator().counters()
        assert counters.get("buckets_started_empty", 0) == 0 and not node.losses.any()
        assert all(node.ownership.awaiting[b].restored for b in taken)  # its states are on their streams
        assert node.keeper.counts["handoff_timeouts"] == 0


async def test_idle_is_the_router_the_keeper_and_the_crawl_together(tmp_path: Path, parts: NodeParts) -> None:
    node = ClusterNode(parts, InProcessHub(M), nodes_dir=tmp_path / "nodes")
    assert node.idle() and node.activity() == 0
    node.crawl.add_local([_item(f"http://{HOST}/2")], 0.0)
    assert not node.idle() and node.activity() == 1  # a new URL counts as activity


async def test_giving_up_keeps_the_first_reason_and_stops_the_node(tmp_path: Path, parts: NodeParts) -> None:
    node = ClusterNode(parts, InProcessHub(M), nodes_dir=tmp_path / "nodes")
    node.give_up(CannotContinue("backend away"), "backend unavailable")
    node.give_up(CannotContinue("store away"), "shared store unusable")
    assert node.failure is not None and str(node.failure) == "backend away"
    assert node.reason == "backend unavailable"
    summary: dict[str, Any] = node_summary(node, 0.0, 1.0)
    assert summary["end"] == "backend unavailable" and summary["finished"] is False


async def test_a_node_that_leaves_hands_its_buckets_over_and_the_other_ends_the_crawl(tmp_path: Path) -> None:
    hub = InProcessHub(M)
    await start_crawl(hub, CONFIG, [], nodes=["a", "b"])
    async with open_parts(CONFIG, tmp_path / "nodes" / "a", node_id="a", n_buckets=M) as parts_a, \
            open_parts(CONFIG, tmp_path / "nodes" / "b", node_id="b", n_buckets=M) as parts_b:
        a = ClusterNode(parts_a, hub, nodes_dir=tmp_path / "nodes")
        b = ClusterNode(parts_b, hub, nodes_dir=tmp_path / "nodes")
        b_running = asyncio.ensure_future(b.run())  # the crawl cannot end while a, in the table, is away
        await _until(lambda: bool(b.ownership.ready))
        a.leave()  # before it starts: its first heartbeat says so, and its half of the table goes to b
        left, done = await asyncio.wait_for(asyncio.gather(a.run(), b_running), 30.0)
    assert left["end"] == "left" and done["end"] == "done"
    assert b.ownership.ready == set(range(M)) and a.ownership.ready == set()
    assert left["buckets"]["handoffs_out"] > 0 and done["buckets"]["handoffs_in"] > 0
    assert sorted(m for m in await hub.coordinator().members()) == []
