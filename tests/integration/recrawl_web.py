"""Helpers for the re-crawl integration tests: a clock that jumps, a small changing web."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from webgather.cluster.mapping import bucket_of, initial
from webgather.config import CrawlConfig, RecrawlConfig
from webgather.clock import SystemClock
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer
from webgather.urls import host_key

from node_crawl_helpers import crawl_config, write_resolve

T0 = 1_700_000_000.0
HOUR = 3600.0


class JumpClock:
    """Real time plus an offset moved by :meth:`advance`: hours pass without sleeping.
    The server and the crawl share one, so the web changes as the crawl sees it."""

    def __init__(self, start_wall: float) -> None:
        self._base = SystemClock()
        self._mono0 = self._base.monotonic()
        self._start = start_wall
        self.offset = 0.0

    def monotonic(self) -> float:
        return self._base.monotonic() + self.offset

    def wall(self) -> float:
        return self._start + (self._base.monotonic() - self._mono0) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)


def changing_web(**overrides: object) -> WebModel:
    """3 hosts, ~45 pages: 40% never change, 60% hourly; 20% of the leaf pages die within 3 hours."""
    values: dict[str, object] = dict(
        seed=3, n_hosts=3, mean_pages_per_host=15, faults=FaultRates.none(), robots_mix=(("allow", 1.0),),
        sitemap_share=0.0, change_mix=((None, 0.4), (HOUR, 0.6)), dying_share=0.2, death_horizon_s=3 * HOUR,
        epoch_s=T0,
    )
    values.update(overrides)
    return WebModel(WebParams(**values))  # type: ignore[arg-type]


def recrawl_config(server: TestWebServer, tmp_path: Path, **recrawl: object) -> CrawlConfig:
    config = crawl_config(crawl_config_for(server.model.params), tmp_path / "out", write_resolve(server, tmp_path))
    return dataclasses.replace(config, recrawl=dataclasses.replace(RecrawlConfig(cycle_s=HOUR), **recrawl))  # type: ignore[arg-type]


@asynccontextmanager
async def split_server(model: WebModel, clock: JumpClock | None, nodes: Sequence[str], at_least: int,
                       n_buckets: int) -> AsyncIterator[TestWebServer]:
    """A running server whose port puts ``at_least`` hosts in each node's buckets (initial table).

    Host keys carry the port, which is random: with a handful of hosts one node got one host or
    none in a few runs in a hundred, and then had too little to crawl for the test to mean anything."""
    table = initial(list(nodes), n_buckets)
    for _ in range(100):
        server = TestWebServer(model, clock=clock) if clock is not None else TestWebServer(model)
        await server.start()
        hosts = (host_key(server.home_url(i)) for i in range(model.hosts.n_hosts))
        owners = Counter(table.owner(bucket_of(key, n_buckets)) for key in hosts)
        if all(owners[node] >= at_least for node in nodes):
            break
        await server.close()
    else:
        raise AssertionError("no port split the hosts")
    try:
        yield server
    finally:
        await server.close()
