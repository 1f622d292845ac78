"""``--partition-by gnp`` in a running cluster: nodes in "cities" on loopback, hosts placed near them.

Each in-process node binds its own source address in 127.0.0.0/8; the synthetic
web delays every response by the latency model's (client address, host) delay.
The nodes measure (httpping), place hosts by GNP, and crawl; the fetched set must
be the closure exactly, with no URL fetched twice, across a join and a leave.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, ownership_intervals, small_web

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.positions import positions_of
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.runtime.member.node import ClusterNode
from webgather.runtime.partition.gnp_probe import probe_url
from webgather.testweb import TestWebServer, WebModel, closure
from webgather.testweb.latency import LatencyModel, parse_latency_model
from webgather.urls import host_key

M = 64


def _city_addresses(model: LatencyModel, count: int) -> list[str]:
    """One 127.0.x.y address in each of the first ``count`` cities."""
    found: dict[int, str] = {}
    for i in range(2000):
        address = f"127.0.{20 + i // 250}.{1 + i % 250}"
        found.setdefault(model.city(address), address)
        if len(found) == model.n_cities:
            return [found[c] for c in sorted(found)][:count]
    raise AssertionError("the model put no address in some city")


def _landmarks(model: LatencyModel, hosts: list[str]) -> tuple[str, ...]:
    """Up to two hosts of every city (spread landmarks, as the study's farthest-point choice)."""
    chosen: list[str] = []
    for city in range(model.n_cities):
        chosen += [h for h in hosts if model.city(h.split(":")[0]) == city][:2]
    return tuple(probe_url(h) for h in chosen)


async def _wait(predicate: Callable[[], bool], timeout_s: float = 40.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


def _misplaced(entries: list[dict[str, Any]], summaries: list[dict[str, Any]], buckets: dict[str, int]) -> list[str]:
    """Fetches by a node that did not own the host's *placed* bucket at that time."""
    spans = ownership_intervals(summaries, end=float("inf"))
    return [f"{e['node']} fetched {e['url']}" for e in entries
            if not any(a - 0.002 <= float(e["fetched_at"]) <= b + 0.002
                       for a, b in spans.get((e["node"], buckets[host_key(e["url"])]), []))]


async def test_hosts_go_to_their_nearest_node_and_the_closure_is_exact(tmp_path: Path) -> None:
    params = small_web(n_hosts=16)
    web, model = WebModel(params), parse_latency_model("cities:4", seed=params.seed)
    addresses = dict(zip("abcd", _city_addresses(model, 4), strict=True))
    out = tmp_path / "crawl"
    async with TestWebServer(web, latency=model) as srv:
        hosts = [srv.home_url(i).split("/")[2] for i in range(params.n_hosts)]
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M,
                                partition_by="gnp", gnp_landmarks=_landmarks(model, hosts), gnp_k=1,
                                gnp_wait_s=10.0)  # measuring takes < 1 s: the margin is for a loaded machine
        seeds = [srv.home_url(0)]
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, config, seeds, nodes=list(addresses))
        async with asyncio.timeout(60):
            summaries = await asyncio.gather(*(
                run_cluster_node(hub, crawl.crawl_config(out_dir=str(out), **{"fetch.source_address": address}),
                                 node_id=node, nodes_dir=out / "nodes", epoch=crawl.epoch)
                for node, address in addresses.items()))
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == closure(web, seeds, config) and duplicates(entries) == {}
    placements = await positions_of(hub).get_placements()
    assert _misplaced(entries, summaries, {h: p.bucket for h, p in placements.items()}) == []
    placed = {h: p.node for h, p in placements.items() if p.node is not None}
    assert [h for h, p in placements.items() if p.node is None] == [host_key(seeds[0])]  # the others: measured

    def ms(node: str, host: str) -> float:
        return 1000 * model.latency_s(addresses[node], host)
    near = [ms(n, h) <= min(ms(m, h) for m in addresses) + 3.0 for h, n in placed.items()]
    assert sum(near) >= 0.8 * len(placed), (sum(near), len(placed))  # Top1: the nearest node, give or take noise
    chosen = statistics.mean(ms(n, h) for h, n in placed.items())
    anyone = statistics.mean(ms(n, h) for h in placed for n in addresses)
    assert chosen < 0.6 * anyone, (chosen, anyone)  # near nodes: far less latency than a random node


async def test_join_and_leave_under_gnp_keep_the_closure_exact(tmp_path: Path) -> None:
    params = small_web(n_hosts=24)
    web, model = WebModel(params), parse_latency_model("cities:4", seed=params.seed)
    addresses = dict(zip("abc", _city_addresses(model, 3), strict=True))
    out = tmp_path / "crawl"
    nodes: dict[str, ClusterNode] = {}
    async with TestWebServer(web, latency=model) as srv:
        hosts = [srv.home_url(i).split("/")[2] for i in range(params.n_hosts)]
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M,
                                min_delay_s=0.05, partition_by="gnp", gnp_landmarks=_landmarks(model, hosts))
        seeds = [srv.home_url(0), srv.home_url(5)]
        expect = closure(web, seeds, config)
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, config, seeds, nodes=["a", "b"])

        def run(node: str) -> Any:
            local = crawl.crawl_config(out_dir=str(out), **{"fetch.source_address": addresses[node]})
            return run_cluster_node(hub, local, node_id=node, nodes_dir=out / "nodes", epoch=crawl.epoch,
                                    on_start=lambda n: nodes.__setitem__(n.node_id, n))

        def pages() -> int:
            return sum(n.parts.stats.pages for n in nodes.values())

        async with asyncio.timeout(90), asyncio.TaskGroup() as group:
            tasks = {node: group.create_task(run(node)) for node in ("a", "b")}
            await _wait(lambda: pages() >= len(expect) // 5)
            tasks["c"] = group.create_task(run("c"))
            await _wait(lambda: "c" in nodes and bool(nodes["c"].ownership.ready)
                        and all(n.ownership.applied() for n in nodes.values()))
            joined_at = pages()
            await _wait(lambda: pages() >= joined_at + len(expect) // 5)
            nodes["a"].leave()
    summaries = [task.result() for task in tasks.values()]
    assert joined_at < len(expect) * 0.7, "the join came too late to matter"
    assert [s["end"] for s in summaries] == ["left", "done", "done"]
    entries = fetch_entries(out)
    fetched = {e["url"] for e in entries}
    assert fetched == expect, (sorted(expect - fetched)[:5], sorted(fetched - expect)[:5])
    assert duplicates(entries) == {}
    placements = await positions_of(hub).get_placements()
    assert _misplaced(entries, summaries, {h: p.bucket for h, p in placements.items()}) == []
    assert sum(p.node is not None for p in placements.values()) >= len(hosts) // 2  # GNP placed most hosts
    assert {"a", "b", "c"} <= {e["node"] for e in entries}
    c = next(s for s in summaries if s["node"] == "c")
    assert c["pages"] > 0 and c["buckets"]["handoffs_in"] > 0
