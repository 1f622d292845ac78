"""A cluster node's metrics (buckets owned, cross-URL traffic, hand-offs) on the in-process backend."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from cluster_crawl_helpers import cluster_config, small_web
from metrics_helpers import free_port, labelled, metrics_threads, port_is_free, scrape_while

from webgather.cluster.inprocess import InProcessHub
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.testweb import TestWebServer, WebModel

M = 64


async def test_two_nodes_serve_their_cluster_metrics(tmp_path: Path) -> None:
    params = small_web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    ports = {"a": free_port(), "b": free_port()}
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M,
                                min_delay_s=0.02)
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, config, [srv.home_url(0)], nodes=["a", "b"])
        runs = {node: asyncio.create_task(run_cluster_node(
            hub, crawl.crawl_config(out_dir=str(out), metrics=f"127.0.0.1:{ports[node]}"), node_id=node,
            nodes_dir=out / "nodes", epoch=crawl.epoch)) for node in ports}
        async with asyncio.timeout(60):
            scrapes = await asyncio.gather(*(scrape_while(ports[node], lambda node=node: not runs[node].done())
                                             for node in ports))
            summaries = [await runs[node] for node in ports]
    for node, node_scrapes, summary in zip(ports, scrapes, summaries, strict=True):
        assert node_scrapes, f"node {node} was never scraped"
        last = node_scrapes[-1]
        assert last[f"webgather_node_info{{node={node}}}"] == 1
        assert 0 < last["webgather_pages_total"] <= summary["pages"]
        assert last["webgather_cross_messages_total"] <= summary["cross"]["messages"]
        assert last["webgather_cross_bytes_total"] <= summary["cross"]["bytes"]
        assert labelled(last, "webgather_handoffs_total") == {"in": 0, "out": 0}  # a version-0 table: none
        assert sum(labelled(last, "webgather_recoveries_total").values()) == 0
        assert port_is_free(ports[node])
    owned = [s["webgather_buckets_owned"] for s in (scrapes[0][-1], scrapes[1][-1])]
    assert sum(owned) == M and min(owned) > 0
    assert sum(s[-1]["webgather_cross_messages_total"] for s in scrapes) > 0
    assert sum(s[-1]["webgather_cross_batches_received_total"] for s in scrapes) > 0
    assert metrics_threads() == []


def test_a_nodes_metrics_setting_is_its_own_not_the_crawls() -> None:
    """``metrics`` is a per-node setting: not stored in the definition, so a node joining with
    another port (or none) is not refused as a different crawl."""
    from webgather.cluster.definition import CrawlDefinition
    from webgather.config import CrawlConfig

    base = CrawlDefinition.of(CrawlConfig(), ["http://a.test/"], 0.0)
    other = CrawlDefinition.of(dataclasses.replace(CrawlConfig(), metrics="9100"), ["http://a.test/"], 0.0)
    assert base.differences(other) == [] and "metrics" not in other.config
    assert other.crawl_config(metrics="127.0.0.1:9101").metrics == "127.0.0.1:9101"
