"""One site that answers some pages 503 with ``Retry-After: 1``: the crawl keeps its pace (issue 13, item 6).

Before the fix the host's back-off doubled over every failed attempt of every
URL (2, 4, 8 s per URL, more when failures came in a row) and a retried URL
held all the host's other URLs until its retry: a 40-page site took minutes.
Now a 503 with Retry-After: 1 costs the host about 1 s, and still never less.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

from webgather.runtime.launch.crawl import run_crawl
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, final_entries, write_resolve

BOUND_S = 20.0
"""About 6 s of Retry-After plus 40 pages at 0.05 s: far below this; before the fix, over 30 s."""


def one_busy_site() -> WebParams:
    no_faults = {f.name: 0.0 for f in dataclasses.fields(FaultRates) if f.name != "bomb"}
    faults = FaultRates(**{**no_faults, "unavailable": 0.05, "bomb": False})  # type: ignore[arg-type]
    return WebParams.for_tests(n_hosts=1, mean_pages_per_host=40.0, pages_sigma=0.0, retry_after_s=1,
                               robots_mix=(("allow", 1.0),), faults=faults)


async def test_a_site_answering_503_with_retry_after_1_keeps_its_pace(tmp_path: Path) -> None:
    model = WebModel(one_busy_site())
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path),
                              min_delay_s=0.05, backoff_base_s=2.0, backoff_max_s=600.0)
        started = time.monotonic()
        try:
            summary = await asyncio.wait_for(run_crawl(config, [server.home_url(0)]), 2 * BOUND_S)
        except TimeoutError:
            summary = {"finished": False}
        elapsed_s = time.monotonic() - started
        records = sorted(server.records)
    entries = final_entries(tmp_path / "out")
    assert summary["finished"] is True and elapsed_s < BOUND_S, \
        f"{len(entries)} pages in {elapsed_s:.1f} s ({len(entries) / elapsed_s:.1f} pages/s)"
    assert sum(e["status"] == 503 for e in entries) >= 2, "the site should have 503 pages"
    for before, after in zip(records, records[1:]):  # the server's Retry-After is still honoured
        if before.status == 503:
            assert after.start_s - before.end_s >= 0.99, f"{after.path} came too soon after a 503"
