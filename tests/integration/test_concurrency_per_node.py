"""``fetch.concurrency`` bounds every request a node has in flight, robots.txt requests included: the
HTTP transport holds that many slots (``fetch.h1_client``; aiohttp's connector limit), whoever asks."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from webgather.runtime.launch.crawl import run_crawl
from webgather.testweb import TestWebServer, WebModel, max_in_flight
from webgather.testweb.latency import LatencyModel
from webgather.testweb.params import WebParams, crawl_config_for


@pytest.mark.parametrize("client", ["native", "aiohttp"])
async def test_robots_txt_requests_count_within_the_concurrency(tmp_path: Path, client: str) -> None:
    params = WebParams.for_tests(n_hosts=8, mean_pages_per_host=4.0, hosts_per_ip=8)
    slow = LatencyModel(base_s=0.1, per_unit_s=0.0, jitter=0.0)  # every answer takes 0.1 s: requests overlap
    async with TestWebServer(WebModel(params), latency=slow) as srv:
        config = crawl_config_for(params)
        config = dataclasses.replace(
            config, out_dir=str(tmp_path / "out"),
            fetch=dataclasses.replace(config.fetch, concurrency=2, total_timeout_s=10.0, http_client=client, resolve_file=str(srv.write_resolve_file(
                tmp_path / "resolve.txt"))),
            politeness=dataclasses.replace(config.politeness, per_ip_connections=8))
        seeds = [srv.home_url(h) for h in range(params.n_hosts)]  # eight robots.txt owed at once
        summary = await asyncio.wait_for(run_crawl(config, seeds), 120)
    assert summary["finished"] is True
    robots = [r for r in srv.records if r.path == "/robots.txt"]
    assert len(robots) >= params.n_hosts
    peak = max_in_flight(srv.records, lambda r: "all")["all"]
    assert peak <= 2, f"{peak} requests in flight with fetch.concurrency 2"
