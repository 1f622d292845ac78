"""runtime.engine.gc_pace: the collector's young-generation threshold while a node crawls, and after."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from webgather.clock import FakeClock
from webgather.config import CrawlConfig, RobotsConfig
from webgather.fetch.model import FetchResult
from webgather.runtime.engine.gc_pace import CRAWL_GEN0_THRESHOLD, crawl_pace
from webgather.runtime.engine.node import CrawlNode
from webgather.runtime.engine.parts import open_parts


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_the_threshold_is_raised_within_and_put_back_by_the_outermost_exit() -> None:
    with crawl_pace():
        assert gc.get_threshold() == (CRAWL_GEN0_THRESHOLD, 10, 10)
        with crawl_pace():  # a second node in the same process
            pass
        assert gc.get_threshold() == (CRAWL_GEN0_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(RuntimeError), crawl_pace():
        raise RuntimeError("a crawl that fails")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_of_the_caller_is_kept() -> None:
    gc.set_threshold(50_000, 5, 5)
    with crawl_pace():
        assert gc.get_threshold() == (50_000, 5, 5)
    assert gc.get_threshold() == (50_000, 5, 5)


class RecordingHttp:
    def __init__(self) -> None:
        self.thresholds: list[tuple[int, int, int]] = []

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        self.thresholds.append(gc.get_threshold())
        return FetchResult(url=url, started_at=0.0, elapsed_s=0.0, status=200,
                           response_headers=(("Content-Type", "text/plain"),), raw_body=b"x", body=b"x")


async def test_a_node_crawls_at_that_pace_and_restores_it(tmp_path: Path) -> None:
    config = CrawlConfig(out_dir=str(tmp_path), robots=RobotsConfig(obey=False))
    async with open_parts(config, tmp_path, clock=FakeClock()) as parts:
        parts.http = http = RecordingHttp()
        node = CrawlNode(parts, linger=False)
        parts.scope.add_seed_hosts(["http://d.test/"])
        assert node.add_seeds(["http://d.test/"]) == 1
        await node.run()
    assert http.thresholds and all(t[0] == CRAWL_GEN0_THRESHOLD for t in http.thresholds)
    assert gc.get_threshold() == (700, 10, 10)
