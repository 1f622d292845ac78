"""N crawl nodes in one process over an InProcessHub, against the synthetic web server.

The invariant: the union of the nodes' fetches equals the web's closure
exactly, no URL is fetched twice, and every fetch is made by the node that
owned its host's bucket at that time, across joins and graceful leaves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import (
    cluster_config,
    duplicates,
    fetch_entries,
    misplaced_fetches,
    overlapping_owners,
    ownership_intervals,
    small_web,
)

from webgather.cluster.inprocess import InProcessHub
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.runtime.member.node import ClusterNode
from webgather.testweb import TestWebServer, WebModel, closure, max_in_flight

M = 64


async def _wait(predicate: Callable[[], bool], timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


def _pages(nodes: dict[str, ClusterNode]) -> int:
    return sum(n.parts.stats.pages for n in nodes.values())


def _check(out: Path, summaries: list[dict[str, Any]], expect: set[str]) -> list[dict[str, Any]]:
    entries = fetch_entries(out)
    fetched = {e["url"] for e in entries}
    assert fetched == expect, (sorted(expect - fetched)[:5], sorted(fetched - expect)[:5])
    assert duplicates(entries) == {}
    spans = ownership_intervals(summaries, end=float("inf"))
    assert misplaced_fetches(entries, spans, M) == []
    assert overlapping_owners(spans) == []
    return entries


async def test_two_nodes_fetch_the_closure_exactly(tmp_path: Path) -> None:
    params = small_web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M)
        seeds = [srv.home_url(0)]
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, config, seeds, nodes=["a", "b"])
        async with asyncio.timeout(60):
            summaries = await asyncio.gather(*(
                run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id=node,
                                 nodes_dir=out / "nodes", epoch=crawl.epoch) for node in ("a", "b")))
        records = list(srv.records)
    entries = _check(out, summaries, closure(model, seeds, config))
    assert {s["end"] for s in summaries} == {"done"}
    assert {e["node"] for e in entries} == {"a", "b"}
    assert sum(s["cross"]["messages"] for s in summaries) > 0
    assert all(n <= 1 for n in max_in_flight(records, lambda r: r.host).values())


async def test_join_and_graceful_leave_mid_crawl_keep_the_closure_exact(tmp_path: Path) -> None:
    params = small_web(n_hosts=24)
    model = WebModel(params)
    out = tmp_path / "crawl"
    nodes: dict[str, ClusterNode] = {}
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"),
                                n_buckets=M, min_delay_s=0.05)
        seeds = [srv.home_url(0), srv.home_url(5)]
        expect = closure(model, seeds, config)
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, config, seeds, nodes=["a", "b"])

        def run(node: str) -> Any:
            return run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id=node,
                                    nodes_dir=out / "nodes", epoch=crawl.epoch,
                                    on_start=lambda n: nodes.__setitem__(n.node_id, n))

        async with asyncio.timeout(90), asyncio.TaskGroup() as group:
            tasks = {node: group.create_task(run(node)) for node in ("a", "b")}
            await _wait(lambda: _pages(nodes) >= len(expect) // 5)
            tasks["c"] = group.create_task(run("c"))
            await _wait(lambda: "c" in nodes and bool(nodes["c"].ownership.ready)
                        and all(n.ownership.applied() for n in nodes.values()))
            joined_at = _pages(nodes)
            await _wait(lambda: _pages(nodes) >= joined_at + len(expect) // 5)
            nodes["a"].leave()
        records = list(srv.records)
    summaries = [task.result() for task in tasks.values()]
    assert joined_at < len(expect) * 0.7, "the join came too late to matter"
    assert [s["end"] for s in summaries] == ["left", "done", "done"]
    _check(out, summaries, expect)
    c = next(s for s in summaries if s["node"] == "c")
    assert c["pages"] > 0 and c["buckets"]["handoffs_in"] > 0
    assert all(n <= 1 for n in max_in_flight(records, lambda r: r.host).values())
