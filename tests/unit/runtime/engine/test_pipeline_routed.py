"""The node's routed-URL cache in front of the per-link path (runtime.engine.pipeline.RoutedUrls)."""

from __future__ import annotations

from dataclasses import replace

from webgather.config import ScopeConfig
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.runtime.engine.pipeline import HostFingerprints, RoutedUrls, extract
from webgather.scope import Scope
from webgather.urls import fingerprint, host_key

BASE = "http://a.test/"
PAGE = b'<html><body><a href="/x">x</a> <a href="/x">again</a> <a href="http://b.test/y">y</a></body></html>'


def _extract(routed: RoutedUrls, depth: int, scope: Scope, url: str = BASE):
    item = CrawlItem(url, fingerprint(url), depth=depth)
    result = FetchResult(url=url, started_at=0.0, elapsed_s=0.01, status=200,
                         response_headers=(("Content-Type", "text/html"),), raw_body=PAGE, body=PAGE)
    return extract(item, result, Decision(parse="page"), scope, HostFingerprints(), routed, want_text=False)


def test_generations_promote_what_is_used_and_drop_what_is_not() -> None:
    routed = RoutedUrls(max_entries=2)
    routed.remember("a", (1, 1))
    routed.remember("b", (2, 2))
    routed.remember("c", (3, 3))  # young was full: {a, b} became old
    assert routed.get("a") == (1, 1)  # promoted into young {c, a}
    routed.remember("d", (4, 4))  # young full again: old = {c, a}, b is gone
    assert routed.get("b") is None
    assert routed.get("a") == (1, 1) and routed.get("d") == (4, 4)
    routed.clear()
    assert len(routed) == 0 and routed.get("d") is None


def test_young_is_the_young_generation_a_page_looks_up_first() -> None:
    """_links_of reads ``young`` directly (one dict lookup a link); what is only in the old
    generation is still found through get(), and a link found there is routed as before."""
    routed = RoutedUrls(max_entries=2)
    routed.remember("a", (1, 1))
    assert routed.young == {"a": (1, 1)}
    routed.remember("b", (2, 2))
    routed.remember("c", (3, 3))  # {a, b} became old
    assert routed.young == {"c": (3, 3)} and routed.get("a") == (1, 1)
    scope = Scope(ScopeConfig(mode="any"), [BASE])
    routed = RoutedUrls(max_entries=1)
    assert len(_extract(routed, 0, scope).items) == 2
    assert list(routed.young) == ["http://b.test/y"]  # /x went to the old generation
    again = _extract(routed, 0, scope)
    assert again.items == [] and again.link_records is not None and len(again.link_records) == 3


def test_a_repeat_page_routes_nothing_but_logs_every_link_with_the_same_fingerprints() -> None:
    scope = Scope(ScopeConfig(mode="any"), [BASE])
    routed = RoutedUrls()
    first = _extract(routed, 0, scope)
    assert sorted(i.url for i in first.items) == ["http://a.test/x", "http://b.test/y"]
    again = _extract(routed, 0, scope)
    assert again.items == []
    assert again.link_records == first.link_records
    x = "http://a.test/x"
    assert first.link_records is not None
    assert first.link_records[0][:3] == (x, fingerprint(x), fingerprint(host_key(x)))
    assert len(first.link_records) == 3  # the repeated href is logged twice


def test_a_url_scope_rejected_as_too_deep_is_routed_when_found_shallower() -> None:
    scope = Scope(ScopeConfig(mode="any", max_depth=1), [BASE])
    routed = RoutedUrls()
    assert _extract(routed, 1, scope).items == []  # links at depth 2: too deep, not remembered
    assert len(routed) == 0
    assert {i.url for i in _extract(routed, 0, scope).items} == {"http://a.test/x", "http://b.test/y"}


def test_without_strip_rules_no_link_pays_a_clean_call_and_with_them_every_link_does() -> None:
    """Issue 18: the per-link identity call is gone when no ``strip_query_params`` is set;
    with rules, each link's URL is cleaned and the page's records follow its links in order."""
    calls: list[str] = []
    plain = Scope(ScopeConfig(mode="any"), [BASE])
    plain.clean = lambda url: calls.append(url) or url
    records = _extract(RoutedUrls(), 0, plain).link_records
    # make_items still cleans each new item (2 here); the 3 links no longer are, one by one
    assert calls == ["http://a.test/x", "http://b.test/y"] and records is not None
    assert [(r[0], r[3]) for r in records] == [("http://a.test/x", "x"), ("http://a.test/x", "again"),
                                                ("http://b.test/y", "y")]
    stripping = Scope(ScopeConfig(mode="any", strip_query_params=("sid",)), [BASE])
    original = stripping.clean
    stripping.clean = lambda url: calls.append(url) or original(url)
    page = PAGE.replace(b'href="/x"', b'href="/x?sid=1"', 1)
    item = CrawlItem(BASE, fingerprint(BASE), depth=0)
    result = FetchResult(url=BASE, started_at=0.0, elapsed_s=0.01, status=200,
                         response_headers=(("Content-Type", "text/html"),), raw_body=page, body=page)
    out = extract(item, result, Decision(parse="page"), stripping, HostFingerprints(), RoutedUrls(), want_text=False)
    assert len(calls) == 2 + 3 + 2 and out.link_records is not None  # 3 links, 2 new items
    assert [r[0] for r in out.link_records] == ["http://a.test/x", "http://a.test/x", "http://b.test/y"]
    assert sorted(i.url for i in out.items) == ["http://a.test/x", "http://b.test/y"]


def test_a_refresh_header_is_a_link_unless_it_reloads_the_page() -> None:
    scope = Scope(ScopeConfig(mode="any"), [BASE])
    body = b"<html><body>moved</body></html>"

    def run(refresh: str) -> list[str]:
        item = CrawlItem(BASE, fingerprint(BASE), depth=0)
        headers = (("Content-Type", "text/html"), ("Refresh", refresh))
        result = FetchResult(url=BASE, started_at=0.0, elapsed_s=0.01, status=200,
                             response_headers=headers, raw_body=body, body=body)
        out = extract(item, result, Decision(parse="page"), scope, HostFingerprints(), RoutedUrls(), want_text=False)
        return [i.url for i in out.items]

    assert run("0; url=/elsewhere") == ["http://a.test/elsewhere"]
    assert run("10") == [] and run("0; url=/") == []


def test_requisites_are_their_own_items_past_the_host_mode_and_keep_their_kind_through_a_redirect() -> None:
    body = (b"<html><head><link rel=stylesheet href='http://cdn.test/s.css'></head>"
            b"<body><img src='/i.png'><a href='http://b.test/y'>y</a></body></html>")
    item = CrawlItem(BASE, fingerprint(BASE), depth=2, priority=2.0)
    result = FetchResult(url=BASE, started_at=0.0, elapsed_s=0.01, status=200,
                         response_headers=(("Content-Type", "text/html"),), raw_body=body, body=body)

    def run(**scope: object) -> list[tuple[str, str, int]]:
        out = extract(item, result, Decision(parse="page"), Scope(ScopeConfig(**scope), [BASE]),  # type: ignore[arg-type]
                      HostFingerprints(), RoutedUrls(), want_text=False)
        return [(i.url, i.kind, i.depth) for i in out.items]

    assert run() == [("http://cdn.test/s.css", "requisite", 2), ("http://a.test/i.png", "requisite", 2)]
    assert run(requisites_any_host=False) == [("http://a.test/i.png", "requisite", 2)]
    assert run(requisites=False) == [] and run(requisite_hops=1) != []
    css = CrawlItem("http://cdn.test/s.css", fingerprint("http://cdn.test/s.css"), depth=2, kind="requisite")
    moved = extract(css, result, Decision(redirect_to="http://cdn2.test/s.css"), Scope(ScopeConfig(), [BASE]),
                    HostFingerprints(), RoutedUrls())
    assert [(i.url, i.kind) for i in moved.items] == [("http://cdn2.test/s.css", "requisite")]
    html_requisite = extract(css, result, Decision(parse="page"), Scope(ScopeConfig(), [BASE]), HostFingerprints(),
                             RoutedUrls())
    assert html_requisite.items == [] and html_requisite.link_records is None  # not a page: no links, no graph
    last = CrawlItem("http://a.test/x.css", fingerprint("http://a.test/x.css"), kind="requisite5")
    sheet = FetchResult(url=last.url, started_at=0.0, elapsed_s=0.01, status=200,
                        response_headers=(("Content-Type", "text/css"),), raw_body=b"a{b:url(c.png)}", body=b"a{b:url(c.png)}")
    assert extract(last, sheet, Decision(), Scope(ScopeConfig(), [BASE]), HostFingerprints(), RoutedUrls()).items == []
    # by default as deep as Sphinx's classic theme: page -> pydoctheme.css -> default.css -> classic.css -> basic.css
    # -> file.png
    fourth = replace(last, kind="requisite4")
    assert [(i.url, i.kind) for i in extract(fourth, sheet, Decision(), Scope(ScopeConfig(), [BASE]), HostFingerprints(),
                                             RoutedUrls()).items] == [("http://a.test/c.png", "requisite5")]
    three = Scope(ScopeConfig(requisite_hops=3), [BASE])
    assert extract(replace(last, kind="requisite3"), sheet, Decision(), three, HostFingerprints(), RoutedUrls()).items == []


def test_under_opic_requisites_carry_no_cash() -> None:
    body = b"<html><body><img src='/i.png'><a href='/x'>x</a></body></html>"
    item = CrawlItem(BASE, fingerprint(BASE), depth=0, priority=-1.0)
    result = FetchResult(url=BASE, started_at=0.0, elapsed_s=0.01, status=200,
                         response_headers=(("Content-Type", "text/html"),), raw_body=body, body=body)
    out = extract(item, result, Decision(parse="page"), Scope(ScopeConfig(), [BASE]), HostFingerprints(), RoutedUrls(),
                  want_text=False, opic=True)
    cash = {i.url: i.priority for i in out.items}
    assert cash == {"http://a.test/x": -1.0, "http://a.test/i.png": 0.0}
