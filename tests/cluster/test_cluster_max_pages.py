"""``max_pages`` is crawl-wide in a cluster: nodes take page permits from one shared counter."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, small_web

from webgather.cluster.inprocess import InProcessHub
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.runtime.member.permits import COUNTER, PagePermits, batch_size
from webgather.testweb import TestWebServer, WebModel, closure

M = 64


async def test_permits_are_taken_in_batches_given_back_and_asked_again_when_blocked() -> None:
    coord = InProcessHub(M).coordinator()
    woken: list[int] = []
    a = PagePermits(coord, 10, 4, lambda: woken.append(1))
    b = PagePermits(coord, 10, 4, lambda: None)
    assert not a.allows(0, wanted=False)  # nothing queued: no permit taken
    assert not a.allows(0, wanted=True)
    await asyncio.sleep(0)
    assert a.held == 4 and woken and a.allows(3, wanted=True) and not a.allows(4, wanted=True)
    await asyncio.sleep(0)
    assert a.held == 8
    assert await b.take() == 2 and await b.take() == 0 and b.blocked(2)
    await a.beat(used=5, wanted=False, idle=True)  # a has nothing to do: 3 go back
    assert a.held == 5 and (await coord.counters())[COUNTER] == 7
    await b.beat(used=2, wanted=True, idle=False)  # b asks again on its beat
    assert b.held == 5 and not b.blocked(2)
    assert batch_size(30, 64) == 1 and batch_size(100_000, 64) == 64 and batch_size(6400, 16) == 16


@pytest.mark.parametrize("max_pages", [1, 37])
async def test_two_nodes_fetch_exactly_max_pages_together(tmp_path: Path, max_pages: int) -> None:
    params = small_web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M)
        seeds = [srv.home_url(0), srv.home_url(3)]
        assert len(closure(model, seeds, config)) > 2 * max_pages
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, dataclasses.replace(config, max_pages=max_pages), seeds, nodes=["a", "b"])
        async with asyncio.timeout(60):
            summaries = await asyncio.gather(*(
                run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id=node,
                                 nodes_dir=out / "nodes", epoch=crawl.epoch) for node in ("a", "b")))
    entries = fetch_entries(out)
    assert len(entries) == sum(s["pages"] for s in summaries) == max_pages
    assert duplicates(entries) == {}
    assert {s["end"] for s in summaries} == {"done"}
    assert (await hub.coordinator().counters())[COUNTER] == max_pages
