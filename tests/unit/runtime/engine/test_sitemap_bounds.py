"""Sitemaps bounded: index depth counts against max_depth, a host's sitemaps list a bounded number of
locations, and a sitemap's parse is held to its own CPU time, not to a busy loop's wall time."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import time

import pytest

from webgather.config import ParseConfig, ScopeConfig
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.parse.sitemap import SitemapDoc
from webgather.runtime.engine import parse_pool
from webgather.runtime.engine.parse_pool import ParsePool
from webgather.runtime.engine.pipeline import HostFingerprints, RoutedUrls, extract, extract_parsed
from webgather.scope import Scope
from webgather.urls import fingerprint

NS = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def index_of(*children: str) -> bytes:
    locs = b"".join(b"<sitemap><loc>%s</loc></sitemap>" % c.encode() for c in children)
    return b"<sitemapindex " + NS + b">" + locs + b"</sitemapindex>"


def urlset(*urls: str) -> bytes:
    return b"<urlset " + NS + b">" + b"".join(b"<url><loc>%s</loc></url>" % u.encode() for u in urls) + b"</urlset>"


def sitemap_result(url: str, body: bytes) -> FetchResult:
    return FetchResult(url=url, started_at=0.0, elapsed_s=0.01, status=200, raw_body=body, body=body)


def test_a_chain_of_sitemap_indexes_counts_its_depth_against_max_depth() -> None:
    scope = Scope(ScopeConfig(mode="any", max_depth=2), ["http://a.test/"])
    depth, url, fetched = 0, "http://a.test/s0.xml", 0
    while True:  # each index lists the next one and a page
        item = CrawlItem(url, fingerprint(url), depth=depth, kind="sitemap")
        body = index_of(f"http://a.test/s{depth + 1}.xml") if depth < 10 else urlset("http://a.test/p")
        got = extract(item, sitemap_result(url, body), Decision(parse="sitemap"), scope, HostFingerprints(), RoutedUrls())
        fetched += 1
        children = [i for i in got.items if i.kind == "sitemap"]
        if not children:
            break
        assert [c.depth for c in children] == [depth + 1]
        depth, url = depth + 1, children[0].url
    assert fetched == 3  # depths 0, 1, 2: the third's child would be at depth 3 (it was endless at depth 0)


def test_pages_a_sitemap_lists_are_one_hop_below_it() -> None:
    scope = Scope(ScopeConfig(mode="any"), ["http://a.test/"])
    item = CrawlItem("http://a.test/s.xml", fingerprint("http://a.test/s.xml"), depth=1, kind="sitemap")
    got = extract(item, sitemap_result(item.url, urlset("http://a.test/1", "http://a.test/2")),
                  Decision(parse="sitemap"), scope, HostFingerprints(), RoutedUrls())
    assert [(i.url, i.depth, i.kind) for i in got.items] == [("http://a.test/1", 2, "page"), ("http://a.test/2", 2, "page")]


async def test_a_hosts_sitemaps_list_a_bounded_number_of_locations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_pool, "MAX_SITEMAP_URLS_PER_HOST", 5)
    pool = ParsePool(ParseConfig())
    four = urlset(*(f"http://a.test/{n}" for n in range(4)))
    try:
        first = await pool.parse_sitemap(four, "a.test")
        second = await pool.parse_sitemap(four, "a.test")
        third = await pool.parse_sitemap(four, "a.test")
        other = await pool.parse_sitemap(four, "b.test")  # each host its own budget
    finally:
        await pool.close()
    assert isinstance(first, SitemapDoc) and isinstance(second, SitemapDoc) and isinstance(third, SitemapDoc)
    assert (len(first.urls), len(second.urls), second.truncated, third) == (4, 1, True, SitemapDoc(truncated=True))
    assert isinstance(other, SitemapDoc) and len(other.urls) == 4


async def test_a_sitemap_parse_is_not_charged_for_a_busy_loop() -> None:
    """A gzip sitemap that parses in a fraction of a second, while the loop is blocked for 1.5 s (as
    routing another sitemap's 50,000 URLs blocked it): parsed, not ``parse_timeout``."""
    body = gzip.compress(urlset(*(f"http://a.test/{n}" for n in range(2000))))
    pool = ParsePool(dataclasses.replace(ParseConfig(), max_seconds=0.5))
    url = "http://a.test/big.xml"
    item = CrawlItem(url, fingerprint(url), depth=0, kind="sitemap")
    try:
        await pool.parse_sitemap(gzip.compress(urlset("http://a.test/x")))  # the worker is up
        asyncio.get_running_loop().call_later(0.02, time.sleep, 1.5)  # the loop stands still
        got, decision = await extract_parsed(pool, item, sitemap_result(url, body), Decision(parse="sitemap"),
                                             Scope(ScopeConfig(mode="any"), [url]), HostFingerprints(), RoutedUrls())
    finally:
        await pool.close()
    assert decision.error is None and got.sitemap is not None and got.sitemap.listed == 2000


async def test_a_hosts_indexes_list_a_bounded_number_of_child_sitemaps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_pool, "MAX_CHILD_SITEMAPS_PER_HOST", 3)
    pool = ParsePool(ParseConfig())
    index = index_of(*(f"http://a.test/s{n}.xml" for n in range(5)))
    try:
        first = await pool.parse_sitemap(index, "a.test")
        second = await pool.parse_sitemap(index, "a.test")
    finally:
        await pool.close()
    assert isinstance(first, SitemapDoc) and isinstance(second, SitemapDoc)
    assert (len(first.sitemaps), first.truncated, second.sitemaps, second.truncated) == (3, True, [], True)
