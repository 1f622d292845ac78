"""The event loop's longest stall while a node takes in one sitemap of ``--urls`` URLs.

A node (one process, this one; no network: its HTTP client is a stand-in that answers
``http://a.test/s.xml`` with the sitemap and anything else with a small page) fetches the
sitemap, parses it and routes its URLs into its frontier, while a timer task ticks every
millisecond; printed: the longest gap between ticks, the wall time of the run, URLs queued.
Run it under another tree with ``PYTHONPATH=TREE``.

    .venv/bin/python bench/sitemap_route.py --urls 50000
    PYTHONPATH=/tmp/base/src .venv/bin/python bench/sitemap_route.py --urls 50000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from webgather.config import CrawlConfig, RobotsConfig
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.runtime.engine.node import CrawlNode
from webgather.runtime.engine.parts import open_parts
from webgather.urls import fingerprint

NS = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


class SitemapHttp:
    def __init__(self, urls: int) -> None:
        self.body = b"<urlset " + NS + b">" + b"".join(
            b"<url><loc>http://a.test/p-%d</loc></url>" % n for n in range(urls)) + b"</urlset>"

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        body = self.body if url.endswith(".xml") else b"x"
        return FetchResult(url=url, started_at=0.0, elapsed_s=0.0, status=200,
                           response_headers=(("Content-Type", "text/plain"),), raw_body=body, body=body)


async def run(urls: int, out: Path) -> dict[str, float | int]:
    async with open_parts(CrawlConfig(out_dir=str(out), robots=RobotsConfig(obey=False)), out) as parts:
        parts.http = SitemapHttp(urls)
        parts.scope.add_seed_hosts(["http://a.test/"])
        node = CrawlNode(parts, drain_timeout_s=600.0, page_permit=lambda used: used < 1)  # the sitemap only
        url = "http://a.test/s.xml"
        node.add_local([CrawlItem(url, fingerprint(url), depth=0, kind="sitemap")], 0.0)
        gaps: list[float] = []

        async def tick() -> None:
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        timer = asyncio.create_task(tick())
        started = time.perf_counter()
        await node.run()
        wall = time.perf_counter() - started
        timer.cancel()
        return {"urls": urls, "longest_loop_stall_s": round(max(gaps), 3), "wall_s": round(wall, 2),
                "urls_queued": node.stats.urls_new}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        print(json.dumps(asyncio.run(run(args.urls, Path(scratch)))))


if __name__ == "__main__":
    main()
