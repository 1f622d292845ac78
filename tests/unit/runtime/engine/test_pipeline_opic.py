"""OPIC in the pipeline: a page's cash is split over its distinct links, routed before or not."""

from __future__ import annotations

import pytest

from webgather.config import ParseConfig, ScopeConfig
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.runtime.engine.parse_pool import ParsePool
from webgather.runtime.engine.pipeline import (
    SEED_CASH, Extracted, HostFingerprints, RoutedUrls, extract, extract_parsed, seed_items,
)
from webgather.scope import Scope
from webgather.urls import fingerprint

BASE = "http://a.test/"
PAGE = (b'<html><body><a href="/x">x</a> <a href="/x">again</a> <a href="http://b.test/y">y</a>'
        b' <a href="/deep/z">z</a></body></html>')
SCOPE = Scope(ScopeConfig(mode="any"), [BASE])


def _extract(routed: RoutedUrls, cash: float, *, opic: bool = True, scope: Scope = SCOPE,
             decision: Decision | None = None, body: bytes = PAGE) -> Extracted:
    item = CrawlItem(BASE, fingerprint(BASE), depth=1, priority=-cash if opic else 1.0)
    result = FetchResult(url=BASE, started_at=0.0, elapsed_s=0.01, status=200,
                         response_headers=(("Content-Type", "text/html"),), raw_body=body, body=body)
    return extract(item, result, decision or Decision(parse="page"), scope, HostFingerprints(), routed,
                   want_text=False, opic=opic)


def shares(extracted: Extracted) -> dict[str, float]:
    return {i.url: -i.priority for i in extracted.items}


def test_cash_is_split_evenly_over_distinct_links() -> None:
    got = shares(_extract(RoutedUrls(), 0.9))
    assert got == {"http://a.test/x": pytest.approx(0.3), "http://b.test/y": pytest.approx(0.3),
                   "http://a.test/deep/z": pytest.approx(0.3)}


def test_links_routed_before_still_carry_their_share() -> None:
    routed = RoutedUrls()
    _extract(routed, 0.9)
    again = _extract(routed, 0.6)  # every link routed before: bfs would route nothing
    assert shares(again) == {"http://a.test/x": pytest.approx(0.2), "http://b.test/y": pytest.approx(0.2),
                             "http://a.test/deep/z": pytest.approx(0.2)}
    assert _extract(routed, 0.6, opic=False).items == []


def test_links_out_of_scope_get_no_share() -> None:
    scope = Scope(ScopeConfig(mode="seed-hosts"), [BASE])
    got = shares(_extract(RoutedUrls(), 1.0, scope=scope))
    assert got == {"http://a.test/x": pytest.approx(0.5), "http://a.test/deep/z": pytest.approx(0.5)}


def test_a_redirect_passes_all_its_cash_and_bfs_priorities_stay_depths() -> None:
    moved = Decision(redirect_to="http://a.test/new")
    assert shares(_extract(RoutedUrls(), 0.7, decision=moved)) == {"http://a.test/new": pytest.approx(0.7)}
    assert {i.priority for i in _extract(RoutedUrls(), 0.0, opic=False).items} == {2.0}
    assert [i.priority for i in _extract(RoutedUrls(), 0.0, opic=False, decision=moved).items] == [1.0]


def test_seeds_start_with_seed_cash_under_opic_only() -> None:
    assert [i.priority for i in seed_items([BASE, "http://b.test/"], SCOPE, opic=True)] == [-SEED_CASH] * 2
    assert [i.priority for i in seed_items([BASE], SCOPE)] == [0.0]


def test_a_sitemap_splits_its_cash_over_the_urls_it_lists() -> None:
    body = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>http://a.test/s1</loc></url><url><loc>http://a.test/s2</loc></url></urlset>")
    got = _extract(RoutedUrls(), 0.5, decision=Decision(parse="sitemap"), body=body)
    assert shares(got) == {"http://a.test/s1": pytest.approx(0.25), "http://a.test/s2": pytest.approx(0.25)}


async def test_the_parse_pool_path_shares_cash_like_extract() -> None:
    pool = ParsePool(ParseConfig())  # an ordinary page is parsed inline: no process starts
    item = CrawlItem(BASE, fingerprint(BASE), depth=1, priority=-0.9)
    result = FetchResult(url=BASE, started_at=0.0, elapsed_s=0.01, status=200,
                         response_headers=(("Content-Type", "text/html"),), raw_body=PAGE, body=PAGE)
    try:
        got, _ = await extract_parsed(pool, item, result, Decision(parse="page"), SCOPE, HostFingerprints(),
                                      RoutedUrls(), want_text=False, opic=True)
    finally:
        await pool.close()
    assert shares(got) == shares(_extract(RoutedUrls(), 0.9))
