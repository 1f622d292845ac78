"""Two nodes of a cluster crawl apply the [scope] rules of the stored definition alike: the closure, exactly."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, small_web

from webgather.cluster.inprocess import InProcessHub
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.testweb import TestWebServer, WebModel, closure

M = 16


async def test_two_nodes_with_scope_rules_fetch_the_closure_under_those_rules(tmp_path: Path) -> None:
    params = small_web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        base = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M)
        rules = dataclasses.replace(base.scope, exclude=(r"/p/\d*7$",), exclude_surt=("http://(test,web,h0004,",),
                                    strip_query_params=("sort",))
        config = dataclasses.replace(base, scope=rules)
        seeds = [srv.home_url(0), srv.home_url(3)]
        expected = closure(model, seeds, config)
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, config, seeds, nodes=["a", "b"])
        async with asyncio.timeout(120):
            summaries = await asyncio.gather(*(
                run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id=node,
                                 nodes_dir=out / "nodes", epoch=crawl.epoch) for node in ("a", "b")))
    entries = fetch_entries(out)
    fetched = {e["url"] for e in entries}
    assert {s["end"] for s in summaries} == {"done"}
    assert {e["node"] for e in entries} == {"a", "b"}
    assert duplicates(entries) == {}
    assert fetched == expected
    assert [u for u in fetched if "/list?page=" in u] and not [u for u in fetched if "sort=" in u or "h0004." in u]
    assert expected != closure(model, seeds, base)
