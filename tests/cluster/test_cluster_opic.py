"""OPIC across nodes: cash travels with cross URLs (past the sent-URL cache) and the crawl stays exact."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, small_web

from webgather.cachepolicy import LruCache
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of
from webgather.cluster.router import Router
from webgather.cluster.wire import UrlBatch, decode
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.clock import FakeClock
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.runtime.member.node import ClusterNode
from webgather.testweb import TestWebServer, WebModel, closure
from webgather.urls import fingerprint

M = 16


def _cash_item(url: str, cash: float) -> CrawlItem:
    return CrawlItem(url, fingerprint(url), depth=1, priority=-cash)


async def test_cross_urls_carry_their_cash_past_the_sent_cache_into_the_owners_frontier() -> None:
    hub, clock = InProcessHub(M), FakeClock()
    host = next(f"h{i}.test" for i in range(100) if bucket_of(f"h{i}.test", M) == 2)
    url, other = f"http://{host}/p", f"http://{host}/q"
    router = Router("a", hub.transport("a"), clock, n_buckets=M, add_local=lambda items, now: items,
                    is_local=lambda bucket: False, batch_urls=1, batch_wait_s=0.0, cache=LruCache(100))
    flusher = asyncio.create_task(router.run())
    try:
        for batch in ([_cash_item(url, 0.25), _cash_item(other, 0.0)], [_cash_item(url, 0.5), _cash_item(other, 0.0)]):
            router.route(batch, clock.monotonic())
            await router.wait_routed()
    finally:
        flusher.cancel()
    assert router.stats.cache_saved == 1  # the cashless repeat of `other`; `url` went twice, with its cash
    owner = Frontier.open(None, FrontierConfig(order="opic"), PolitenessConfig(min_delay_s=0.0), n_buckets=M)
    for message in await hub.transport("b").receive([2], 10, 0):
        batch = decode(message.payload)
        assert isinstance(batch, UrlBatch)
        owner.add(list(batch.items), 0.0)
    got, _ = owner.next_ready(0.0)
    assert got is not None and got.url == url and -got.priority == 0.75


async def test_two_opic_nodes_fetch_the_closure_and_cash_reaches_the_node_without_seeds(tmp_path: Path) -> None:
    params = small_web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    nodes: dict[str, ClusterNode] = {}
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=64)
        config = dataclasses.replace(config, frontier=FrontierConfig(order="opic"))
        seeds = [srv.home_url(0)]
        hub = InProcessHub(64)
        crawl = await start_crawl(hub, config, seeds, nodes=["a", "b"])
        async with asyncio.timeout(60):
            summaries: list[dict[str, Any]] = await asyncio.gather(*(
                run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id=node, nodes_dir=out / "nodes",
                                 epoch=crawl.epoch, on_start=lambda n: nodes.__setitem__(n.node_id, n))
                for node in ("a", "b")))
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == closure(model, seeds, config)
    assert duplicates(entries) == {}
    assert {s["end"] for s in summaries} == {"done"}
    history = {name: node.parts.frontier.cash.history for name, node in nodes.items()}  # type: ignore[union-attr]
    seed_owner = "a" if any(e["url"] == seeds[0] and e["node"] == "a" for e in entries) else "b"
    other = "b" if seed_owner == "a" else "a"
    # all cash starts at the one seed: what the other node's pages held came in cross URLs
    assert history[seed_owner] > 0.0 and history[other] > 0.0


async def _wait(predicate: Callable[[], bool], timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


async def test_a_node_joining_an_opic_crawl_takes_buckets_with_their_cash_and_the_crawl_stays_exact(
        tmp_path: Path) -> None:
    params = small_web(n_hosts=24)
    model = WebModel(params)
    out = tmp_path / "crawl"
    nodes: dict[str, ClusterNode] = {}
    imported: list[float] = []
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"),
                                n_buckets=64, min_delay_s=0.05)
        config = dataclasses.replace(config, frontier=FrontierConfig(order="opic"))
        seeds = [srv.home_url(0), srv.home_url(5)]
        expect = closure(model, seeds, config)
        hub = InProcessHub(64)
        crawl = await start_crawl(hub, config, seeds, nodes=["a", "b"])

        def started(node: ClusterNode) -> None:
            nodes[node.node_id] = node
            if node.node_id == "c":  # record the cash of every item a hand-off brings
                frontier, original = node.parts.frontier, node.parts.frontier.import_bucket

                def spy(state: Any) -> int:
                    imported.extend(-item.priority for item in state.items)
                    return original(state)
                frontier.import_bucket = spy  # type: ignore[method-assign]

        def run(node: str) -> Any:
            return run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id=node,
                                    nodes_dir=out / "nodes", epoch=crawl.epoch, on_start=started)

        async with asyncio.timeout(90), asyncio.TaskGroup() as group:
            tasks = {node: group.create_task(run(node)) for node in ("a", "b")}
            await _wait(lambda: sum(n.parts.stats.pages for n in nodes.values()) >= len(expect) // 5)
            tasks["c"] = group.create_task(run("c"))
    summaries = [task.result() for task in tasks.values()]
    assert {s["end"] for s in summaries} == {"done"}
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == expect
    assert duplicates(entries) == {}
    c = next(s for s in summaries if s["node"] == "c")
    assert c["buckets"]["handoffs_in"] > 0
    assert imported and max(imported) > 0.0, "the queued items handed over carried no cash"
