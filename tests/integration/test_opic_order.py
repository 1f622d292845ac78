"""OPIC in a running node: on a web with skewed in-degree the first pages fetched are the
important ones (higher mean in-degree and PageRank than breadth-first), the fetched set is
still exactly the closure, and the per-host delay still holds."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from webgather.config import FrontierConfig
from webgather.runtime.launch.crawl import run_crawl
from webgather.sim.order import pagerank
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, fetched_urls, final_entries, write_resolve

MIN_DELAY_S = 0.002
SHARES = (0.1, 0.2)


@pytest.fixture(scope="module")
def model() -> WebModel:
    # 10 hosts, 1,200 pages, in-degree ~ k^-1.86; no fixtures, every robots.txt allows all
    params = WebParams(seed=3, n_hosts=10, mean_pages_per_host=120.0, pages_sigma=0.5, mean_out_degree=12.0,
                       mean_page_bytes=2000, robots_mix=(("allow", 1.0),), sitemap_share=0.0,
                       dying_share=0.0, faults=FaultRates.none())
    return WebModel(params)


def _page_key(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return (parts.hostname or "", parts.path)


async def _crawl(model: WebModel, order: str, tmp_path: Path) -> tuple[list[str], set[str], list]:
    out = tmp_path / order
    async with TestWebServer(model) as server:
        base = crawl_config_for(model.params, frontier=FrontierConfig(order=order))  # type: ignore[arg-type]
        config = crawl_config(base, out, write_resolve(server, tmp_path), min_delay_s=MIN_DELAY_S)
        config = dataclasses.replace(config, fetch=dataclasses.replace(config.fetch, concurrency=4))
        seeds = [server.home_url(0)]
        summary = await run_crawl(config, seeds)
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
        records = list(server.records)
    assert summary["finished"] is True
    entries = final_entries(out)
    fetched = fetched_urls(entries)
    assert set(fetched) == set(expected.fetched) and max(fetched.values()) == 1
    order_of_fetch = [e["url"] for e in sorted(entries, key=lambda e: e["fetched_at"]) if e["status"] == 200]
    return order_of_fetch, set(fetched), records


def _importance(model: WebModel, fetched_in_order: list[str]) -> dict[str, float]:
    graph = model.link_graph()
    assert graph.urls is not None
    index = {_page_key(u): i for i, u in enumerate(graph.urls)}
    pages = np.array([index[k] for u in fetched_in_order if (k := _page_key(u)) in index])
    in_degree = np.bincount(graph.dst, minlength=graph.n_pages)
    rank = pagerank(graph) * graph.n_pages  # 1.0 = an average page
    out = {}
    for share in SHARES:
        first = pages[: int(round(share * len(pages)))]
        out[f"indegree@{share:.0%}"] = float(in_degree[first].mean())
        out[f"pagerank@{share:.0%}"] = float(rank[first].mean())
    return out


def _assert_min_delay(records: list) -> None:
    by_host: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in records:
        by_host[r.host].append((r.start_s, r.end_s))
    for host, spans in by_host.items():
        spans.sort()
        for (s0, e0), (s1, _e1) in zip(spans, spans[1:]):
            assert s1 >= e0 and s1 - e0 >= MIN_DELAY_S - 0.001, f"{host}: requests {s1 - e0:.4f}s apart"


async def test_opic_fetches_important_pages_first_and_still_the_whole_closure(model: WebModel, tmp_path: Path) -> None:
    bfs_order, bfs_set, _ = await _crawl(model, "bfs", tmp_path)
    opic_order, opic_set, records = await _crawl(model, "opic", tmp_path)
    assert {_page_key(u) for u in opic_set} == {_page_key(u) for u in bfs_set}  # (each server has its own port)
    _assert_min_delay(records)
    bfs, opic = _importance(model, bfs_order), _importance(model, opic_order)
    print(f"\npages fetched {len(opic_set)}; bfs {bfs}; opic {opic}")
    for name, value in opic.items():
        assert value > 1.08 * bfs[name], f"{name}: opic {value:.2f} vs bfs {bfs[name]:.2f}"
