"""Helpers for the re-crawl integration tests: a clock that jumps, a small changing web."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from webgather.config import CrawlConfig, RecrawlConfig
from webgather.runtime.clock import SystemClock
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

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
