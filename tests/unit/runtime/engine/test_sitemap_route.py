"""Sitemaps through a node (runtime.engine.sitemap_route): a sitemap's URLs enter the frontier in
bounded batches with the loop turning between them, a stop abandons a sitemap mid-routing, and only
a few sitemaps are fetched, parsed and routed at once, none of them holding a fetch slot while it waits."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from webgather.clock import FakeClock
from webgather.config import CrawlConfig, FetchConfig, ParseConfig, RobotsConfig
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.runtime.engine import sitemap_route
from webgather.runtime.engine.node import CrawlNode
from webgather.runtime.engine.page_hooks import HookFunctions
from webgather.runtime.engine.parts import open_parts
from webgather.runtime.engine.sitemap_route import SITEMAP_BATCH, SITEMAP_TURNS
from webgather.store.crawllog import CRAWL_LOG_NAME, read_crawl_log
from webgather.urls import fingerprint, host_key

NS = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(host: str, count: int) -> bytes:
    locs = b"".join(b"<url><loc>http://%s/p%d</loc></url>" % (host.encode(), n) for n in range(count))
    return b"<urlset " + NS + b">" + locs + b"</urlset>"


class SitemapHttp:
    """``/s.xml`` of each host: a sitemap of ``count`` pages; other URLs: a small text page.
    Counts the sitemap fetches under way at once; a sitemap fetch waits for ``release`` if given."""

    def __init__(self, count: int, release: asyncio.Event | None = None) -> None:
        self.count, self.release = count, release
        self.sitemaps_now = self.most_sitemaps = 0
        self.pages: list[str] = []

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        if not url.endswith("/s.xml"):
            self.pages.append(url)
            return FetchResult(url=url, started_at=0.0, elapsed_s=0.0, status=200,
                               response_headers=(("Content-Type", "text/plain"),), raw_body=b"x", body=b"x")
        self.sitemaps_now += 1
        self.most_sitemaps = max(self.most_sitemaps, self.sitemaps_now)
        try:
            await (self.release.wait() if self.release is not None else asyncio.sleep(0.05))
        finally:
            self.sitemaps_now -= 1
        body = urlset(host_key(url), self.count)
        return FetchResult(url=url, started_at=0.0, elapsed_s=0.0, status=200,
                           response_headers=(("Content-Type", "application/xml"),), raw_body=body, body=body)


def config_in(path: Path, concurrency: int = 64) -> CrawlConfig:
    # parsed on the loop (no parser process to start): the routing is what is under test
    return CrawlConfig(out_dir=str(path), robots=RobotsConfig(obey=False), fetch=FetchConfig(concurrency=concurrency),
                       parse=dataclasses.replace(ParseConfig(), inline_max_bytes=16 << 20))


def sitemap_item(host: str) -> CrawlItem:
    url = f"http://{host}/s.xml"
    return CrawlItem(url, fingerprint(url), depth=0, kind="sitemap")


Routed = Callable[[list[CrawlItem], float], list[CrawlItem]]


async def test_a_sitemap_of_50000_urls_enters_the_frontier_in_bounded_batches_the_loop_turning_between(
    tmp_path: Path,
) -> None:
    ticks = 0
    calls: list[tuple[int, int]] = []  # (items, ticks so far) of each routing call

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async with open_parts(config_in(tmp_path), tmp_path, clock=FakeClock()) as parts:
        parts.http = SitemapHttp(50_000)
        parts.scope.add_seed_hosts(["http://a.test/"])

        def route(items: list[CrawlItem], now: float) -> list[CrawlItem]:
            calls.append((len(items), ticks))
            return node.add_local(items, now)

        node = CrawlNode(parts, router=route, drain_timeout_s=300.0, page_permit=lambda used: used < 1)
        route([sitemap_item("a.test")], 0.0)
        calls.clear()
        timer = asyncio.create_task(ticker())
        try:
            await node.run()
        finally:
            timer.cancel()
        assert node.stats.urls_new == 1 + 50_000
    sizes = [size for size, _ in calls if size]
    assert sum(sizes) == 50_000 and max(sizes) <= SITEMAP_BATCH, sizes[:5]  # one call of 50,000 before
    marks = [mark for size, mark in calls if size]
    assert all(later > earlier for earlier, later in zip(marks, marks[1:])), "the loop did not turn between batches"


async def test_a_stop_abandons_a_sitemap_mid_routing_and_leaves_it_in_flight(tmp_path: Path) -> None:
    routed = 0
    async with open_parts(config_in(tmp_path), tmp_path, clock=FakeClock()) as parts:
        parts.http = SitemapHttp(50_000)
        parts.scope.add_seed_hosts(["http://a.test/"])

        def route(items: list[CrawlItem], now: float) -> list[CrawlItem]:
            nonlocal routed
            routed += len(items)
            if routed > 2 * SITEMAP_BATCH:
                node.stop()  # as SIGTERM does (runtime.engine.signals)
            return node.add_local(items, now)

        node = CrawlNode(parts, router=route, drain_timeout_s=300.0, page_permit=lambda used: used < 1)
        node.add_local([sitemap_item("a.test")], 0.0)
        await asyncio.wait_for(node.run(), 60.0)
        assert node.stats.pages == 0
    assert routed <= 4 * SITEMAP_BATCH  # all 50,000 before: a stop waited for the whole sitemap
    assert [e["url"] for e in read_crawl_log(tmp_path / CRAWL_LOG_NAME)] == []  # not archived: fetched again on resume
    async with open_parts(config_in(tmp_path), tmp_path, clock=FakeClock()) as parts:  # the resume
        parts.http = http = SitemapHttp(10)
        assert parts.frontier.next_ready(0.0)[0] == sitemap_item("a.test")
        assert http.pages == []


async def test_only_a_few_sitemaps_are_fetched_parsed_and_routed_at_once(tmp_path: Path) -> None:
    hosts = [f"h{n}.test" for n in range(3 * SITEMAP_TURNS)]
    async with open_parts(config_in(tmp_path), tmp_path, clock=FakeClock()) as parts:
        parts.http = http = SitemapHttp(3 * SITEMAP_BATCH)
        parts.scope.add_seed_hosts([f"http://{h}/" for h in hosts])
        node = CrawlNode(parts, drain_timeout_s=300.0,
                         page_permit=lambda used: used < len(hosts))  # the sitemaps, none of their pages
        node.add_local([sitemap_item(h) for h in hosts], 0.0)
        await asyncio.wait_for(node.run(), 120.0)
        assert node.stats.pages == len(hosts) and node.stats.urls_new == len(hosts) * (1 + 3 * SITEMAP_BATCH)
    assert http.most_sitemaps == SITEMAP_TURNS  # before: all twelve at once, their bodies and URLs held together


async def test_a_sitemap_waiting_for_its_turn_holds_no_fetch_slot(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sitemap_route, "SITEMAP_TURNS", 1)
    release = asyncio.Event()
    async with open_parts(config_in(tmp_path, concurrency=2), tmp_path, clock=FakeClock()) as parts:
        parts.http = http = SitemapHttp(10, release)
        parts.scope.add_seed_hosts(["http://a.test/", "http://b.test/", "http://c.test/", "http://page.test/"])
        node = CrawlNode(parts, drain_timeout_s=60.0, page_permit=lambda used: used < 4)
        node.add_local([sitemap_item("a.test"), sitemap_item("b.test"), sitemap_item("c.test")], 0.0)
        node.add_local([CrawlItem("http://page.test/", fingerprint("http://page.test/"))], 0.0)
        running = asyncio.create_task(node.run())
        for _ in range(200):  # one sitemap fetching, two waiting for the turn: the page takes the other slot
            if http.pages:
                break
            await asyncio.sleep(0.01)
        assert http.pages == ["http://page.test/"] and http.sitemaps_now == 1
        release.set()
        await asyncio.wait_for(running, 60.0)


async def test_on_link_sees_a_sitemaps_urls_batch_by_batch_and_its_failure_is_recorded(tmp_path: Path) -> None:
    seen: list[str] = []

    def even_only(url: str) -> bool:
        seen.append(url)
        if url.endswith("/p2400"):
            raise ValueError("no luck")
        return int(url.rpartition("/p")[2]) % 2 == 0

    async with open_parts(config_in(tmp_path), tmp_path, clock=FakeClock(),
                          hooks=HookFunctions(on_link=even_only)) as parts:
        parts.http = SitemapHttp(2500)
        parts.scope.add_seed_hosts(["http://a.test/"])
        node = CrawlNode(parts, drain_timeout_s=300.0, page_permit=lambda used: used < 1)
        node.add_local([sitemap_item("a.test")], 0.0)
        await asyncio.wait_for(node.run(), 60.0)
        assert node.stats.urls_new == 1 + 1000 + 500  # two batches filtered; the third's hook raised: all kept
        assert parts.page_hooks is not None and parts.page_hooks.counts["links_dropped"] == 1000
    assert len(seen) == 2000 + 401
    [entry] = read_crawl_log(tmp_path / CRAWL_LOG_NAME)
    assert entry["error"] == "hook_error" and "on_link raised ValueError: no luck" in entry["detail"]
