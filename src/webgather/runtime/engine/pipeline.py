"""Per fetch result: decide -> parse -> archive -> route. The only place those meet.

Order matters for crash safety: the links a page yields are added to the
frontier (durably) and its crawl-log entry is written before the frontier marks
the page done, so a kill -9 at any point loses no discovered URL; at worst the
page is fetched again after a restart.

OPIC (``opic=True``, ``frontier.order = "opic"``): an item's cash is ``-priority``.
A page's cash is split evenly over its distinct followable links (those in
scope, and every link routed before: its share must reach the URL even though
it is queued or fetched already, :mod:`webgather.frontier.cash`), a redirect
passes all of it to its target, a sitemap splits it over the URLs it lists;
each seed starts with ``SEED_CASH``.

A sitemap lists up to 50,000 URLs: :func:`extract_parsed` hands them on as
:class:`SitemapLocations`, made crawl items a batch at a time
(:mod:`webgather.runtime.engine.sitemap_route` routes them).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from selectolax.lexbor import LexborHTMLParser

from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.parse.links import Link, ParsedPage, followable, parse_page
from webgather.parse.refresh import refresh_target
from webgather.parse.sitemap import SitemapDoc, parse_sitemap
from webgather.runtime.engine.parse_pool import PARSE_TRUNCATED, ParseFailure, ParsePool
from webgather.runtime.engine.requisite_items import is_requisite, requisite_items, stylesheet_items, wants_requisites
from webgather.scope import Scope
from webgather.urls import fingerprint, host_key

__all__ = [
    "SEED_CASH", "Extracted", "HostFingerprints", "RoutedUrls", "SitemapLocations", "extract", "extract_parsed",
    "link_log_args", "log_entry", "make_items", "robots_entry", "seed_items", "unfetched_entry",
]

log = logging.getLogger(__name__)

LinkRecord = tuple[str, int, int, str, bool]
SEED_CASH = 1.0
"""OPIC cash each seed starts with (a fixed amount, so nodes need not agree on the number of seeds)."""


@dataclass(slots=True)
class Extracted:
    items: list[CrawlItem]
    """New URLs to route (already scope-checked)."""
    link_records: list[LinkRecord] | None
    """(dst_url, dst_fp, dst_host_fp, anchor, nofollow) for the link log, or None."""
    links_found: int = 0
    text: str = ""
    """The page's visible text (parsed pages only; the re-crawl's SimHash reads it)."""
    page: ParsedPage | None = None
    """The parsed HTML page, kept only when asked (``keep_page``: a crawl with an ``on_page`` hook)."""
    tree: LexborHTMLParser | None = None
    """Its lexbor tree, when it was parsed inline (``keep_page``)."""
    sitemap: SitemapLocations | None = None
    """A parsed sitemap's locations, still to be made items and routed (``items`` is then empty)."""


class SitemapLocations:
    """The pages and child sitemaps one parsed sitemap lists, as scope-checked crawl items made
    ``size`` at a time: the items of all 50,000 locations of a sitemap are never held at once.

    Each is one hop below the sitemap (a chain of sitemap indexes is bounded by
    ``scope.max_depth`` like a chain of links: 42,156 sitemaps, none of their pages, when children
    stayed at depth 0); under OPIC each carries an even share of the sitemap's cash, split over
    every location it lists (in scope or not: counting the ones in scope first would take the
    whole list's scope checks at once). The locations are canonical already
    (:func:`webgather.parse.sitemap.parse_sitemap`)."""

    __slots__ = ("_doc", "_item", "_scope", "_share", "listed")

    def __init__(self, item: CrawlItem, doc: SitemapDoc, scope: Scope, opic: bool = False) -> None:
        self._item, self._doc, self._scope = item, doc, scope
        self.listed = len(doc.urls) + len(doc.sitemaps)
        """Locations the sitemap lists (scope not yet applied)."""
        self._share = min(item.priority, 0.0) / max(1, self.listed) if opic else None

    def batches(self, size: int) -> Iterator[list[CrawlItem]]:
        """The in-scope items, at most ``size`` a list (a list may come out empty)."""
        depth = self._item.depth + 1
        share = self._share
        for kind, urls in (("page", self._doc.urls), ("sitemap", self._doc.sitemaps)):
            priority = share if share is not None else float(depth) if kind == "page" else 0.0
            for start in range(0, len(urls), size):
                yield make_items([CrawlItem(url, fingerprint(url), depth, 0, 0, priority, kind)
                                  for url in urls[start:start + size]], self._scope)


class HostFingerprints:
    """Fingerprints of host keys, memoized: the link log needs one per link."""

    def __init__(self, max_entries: int = 200_000) -> None:
        self._cache: dict[str, int] = {}
        self._max = max_entries

    def __call__(self, host: str) -> int:
        value = self._cache.get(host)
        if value is None:
            if len(self._cache) >= self._max:
                self._cache.clear()
            value = self._cache[host] = fingerprint(host)
        return value


class RoutedUrls:
    """Canonical URLs this node has already routed, with their fingerprints: a cache in
    front of the whole per-link path (the documents' URL-seen cache, at the node).

    About 95% of the links a page yields were routed before (menus, popular pages).
    A hit costs one dict lookup on the URL string; a miss pays the fingerprint, the
    scope check and the seen-test. A hit is always a true "routed before" (the
    seen-test or the router's owner took it), so nothing new is ever dropped.
    Two generations of at most ``max_entries`` each: when the young one is full it
    becomes the old one, and an old entry that is used again is promoted (an LRU
    approximation with no per-hit bookkeeping).
    """

    def __init__(self, max_entries: int = 1 << 15) -> None:
        self._young: dict[str, tuple[int, int]] = {}
        self._old: dict[str, tuple[int, int]] = {}
        self._max = max_entries

    def get(self, url: str) -> tuple[int, int] | None:
        fps = self._young.get(url)
        if fps is None:
            fps = self._old.get(url)
            if fps is not None:
                self.remember(url, fps)
        return fps

    @property
    def young(self) -> dict[str, tuple[int, int]]:
        """The young generation, for a caller's own first lookup (read only: a hit there needs no promotion)."""
        return self._young

    def remember(self, url: str, fps: tuple[int, int]) -> None:
        if len(self._young) >= self._max:
            self._old, self._young = self._young, {}
        self._young[url] = fps

    def clear(self) -> None:
        """Forget everything (the node's buckets changed hands)."""
        self._young, self._old = {}, {}

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


def extract(
    item: CrawlItem,
    result: FetchResult,
    decision: Decision,
    scope: Scope,
    host_fp: HostFingerprints,
    routed: RoutedUrls,
    *,
    want_text: bool = True,
    opic: bool = False,
) -> Extracted:
    """New crawl items (redirect target, links or sitemap URLs) and link-log records.

    ``want_text=False`` skips the page's visible text (``Extracted.text`` stays
    ""): about 40% of the parse, wasted unless a re-crawl's SimHash reads it.
    ``opic``: the items carry their share of the page's cash (module docstring)."""
    if decision.redirect_to is not None:
        requisite = is_requisite(item)
        target = CrawlItem(
            decision.redirect_to, fingerprint(decision.redirect_to), depth=item.depth,
            redirects=item.redirects + 1, priority=min(item.priority, 0.0) if opic else float(item.depth),
            kind=item.kind if requisite else "page",
        )
        return Extracted(make_items([target], scope), None)
    if is_requisite(item):
        return _from_requisite(item, result, scope, routed)
    if decision.parse == "sitemap":
        listed = SitemapLocations(item, parse_sitemap(result.body), scope, opic)
        return Extracted([i for batch in listed.batches(1 << 16) for i in batch], None, listed.listed)
    if decision.parse == "page":
        return _from_page(item, result, scope, host_fp, routed, want_text, opic)
    return Extracted([], None)


async def extract_parsed(
    pool: ParsePool,
    item: CrawlItem,
    result: FetchResult,
    decision: Decision,
    scope: Scope,
    host_fp: HostFingerprints,
    routed: RoutedUrls,
    *,
    want_text: bool = True,
    opic: bool = False,
    keep_page: bool = False,
) -> tuple[Extracted, Decision]:
    """:func:`extract` with the HTML page or sitemap parsed by ``pool`` (bounded in time, off
    the loop when it could be slow); a sitemap's URLs come as ``Extracted.sitemap``, not as
    items (:class:`SitemapLocations`). A document the pool could not parse yields nothing
    (archived unparsed, no link-log record) and the decision returned carries the error kind.
    ``keep_page``: the result keeps the parsed HTML page and its tree (``Extracted.page``, ``tree``)."""
    if decision.redirect_to is not None or decision.parse not in ("page", "sitemap") or is_requisite(item):
        return extract(item, result, decision, scope, host_fp, routed, want_text=want_text, opic=opic), decision
    if decision.parse == "sitemap":
        return await _sitemap_parsed(pool, item, result, decision, scope, opic)
    doc: ParsedPage | ParseFailure | tuple[ParsedPage, LexborHTMLParser | None]
    requisites = wants_requisites(item, scope)
    if keep_page:
        doc = await pool.parse_with_tree(item.url, result.body, result.header("Content-Type"), want_text=want_text,
                                         want_requisites=requisites)
    else:
        doc = await pool.parse(item.url, result.body, result.header("Content-Type"), want_text=want_text,
                               want_requisites=requisites)
    if isinstance(doc, ParseFailure):
        return _unparsed(item, doc, decision)
    return _from_parsed(item, doc, decision, scope, host_fp, routed, opic, result.header("Refresh"))


def _from_parsed(
    item: CrawlItem, doc: ParsedPage | tuple[ParsedPage, LexborHTMLParser | None], decision: Decision, scope: Scope,
    host_fp: HostFingerprints, routed: RoutedUrls, opic: bool, refresh: str | None,
) -> tuple[Extracted, Decision]:
    """The links of a page the pool parsed (with its tree if ``doc`` has one). One parsed from a prefix
    (``cut_at``: it was over ``parse.max_bytes`` or ``max_tags``) is ``parse_truncated``; its links are followed."""
    page = doc[0] if isinstance(doc, tuple) else doc
    if page.cut_at is not None and decision.error is None:
        decision = replace(decision, error=PARSE_TRUNCATED)
    out = _links_of(item, page, scope, host_fp, routed, opic, refresh)
    if isinstance(doc, tuple):
        out.page, out.tree = doc
    return out, decision


async def _sitemap_parsed(pool: ParsePool, item: CrawlItem, result: FetchResult, decision: Decision, scope: Scope,
                          opic: bool) -> tuple[Extracted, Decision]:
    doc = await pool.parse_sitemap(result.body, host_key(item.url))
    if isinstance(doc, ParseFailure):
        return _unparsed(item, doc, decision)
    listed = SitemapLocations(item, doc, scope, opic)
    return Extracted([], None, listed.listed, sitemap=listed), decision


def _unparsed(item: CrawlItem, failure: ParseFailure, decision: Decision) -> tuple[Extracted, Decision]:
    log.warning("%s not parsed: %s (%s)", item.url, failure.kind, failure.detail)
    return Extracted([], None), replace(decision, error=failure.kind)


def _from_page(
    item: CrawlItem, result: FetchResult, scope: Scope, host_fp: HostFingerprints, routed: RoutedUrls,
    want_text: bool, opic: bool = False,
) -> Extracted:
    page = parse_page(item.url, result.body, result.header("Content-Type"), want_text=want_text,
                      want_requisites=wants_requisites(item, scope))
    return _links_of(item, page, scope, host_fp, routed, opic, result.header("Refresh"))


def _followed(page: ParsedPage, refresh: str | None) -> list[Link]:
    """The page's followable links, after the target of its ``Refresh`` header (tag ``refresh``) if any."""
    links = followable(page)
    target = None if refresh is None or page.meta_nofollow else refresh_target(page.url, page.url, refresh)
    return links if target is None else [Link(target, "", False, "refresh"), *links]


def _links_of(item: CrawlItem, page: ParsedPage, scope: Scope, host_fp: HostFingerprints, routed: RoutedUrls,
              opic: bool = False, refresh: str | None = None) -> Extracted:
    depth = item.depth + 1
    records: list[LinkRecord] = []
    candidates: list[CrawlItem] = []
    known: dict[str, tuple[int, int]] = {}  # pages repeat links: look each URL up once
    clean = None if scope.rules.strip is None else scope.clean  # no strip rules: no call per link
    young, get = routed.young, routed.get  # most links hit the young generation: one dict lookup
    for href, anchor, nofollow, _tag in _followed(page, refresh):  # unpacked: a named tuple's fields are slower
        url = href if clean is None else clean(href)
        fps = known.get(url)
        if fps is None:
            fps = young.get(url) or get(url)
            if fps is None:
                fps = (fingerprint(url), host_fp(host_key(url)))
                candidates.append(CrawlItem(url, fps[0], depth=depth, priority=float(depth)))
            known[url] = fps
        records.append((url, fps[0], fps[1], anchor, nofollow))
    items = make_items(candidates, scope)
    for new in items:  # only what scope let in: a URL rejected as too deep may come back shallower
        routed.remember(new.url, known[new.url])
    if opic:
        items = _page_shares(item, items, known, {c.url for c in candidates}, depth)
    if page.requisites:
        items += requisite_items(item, page.requisites, scope, routed)
    return Extracted(items, records, len(page.links), page.text)


def _from_requisite(item: CrawlItem, result: FetchResult, scope: Scope, routed: RoutedUrls) -> Extracted:
    """A requisite is not a page: no links, no link-log record; a stylesheet's own requisites."""
    items, found = stylesheet_items(item, result, scope, routed)
    return Extracted(items, None, found)


def _page_shares(item: CrawlItem, items: list[CrawlItem], known: dict[str, tuple[int, int]], new_urls: set[str],
                 depth: int) -> list[CrawlItem]:
    """OPIC: the page's new in-scope links and every link routed before (``known`` minus ``new_urls``:
    its cash must reach the URL though it is queued or fetched already), each with an even share."""
    if not item.priority < 0.0:
        return [CrawlItem(i.url, i.fp, depth, 0, 0, 0.0) for i in items]
    again = [(url, fps[0]) for url, fps in known.items() if url not in new_urls]
    share = item.priority / max(1, len(items) + len(again))
    return [CrawlItem(i.url, i.fp, depth, 0, 0, share) for i in items] + [
        CrawlItem(url, fp, depth, 0, 0, share) for url, fp in again]


def make_items(items: Iterable[CrawlItem], scope: Scope) -> list[CrawlItem]:
    """The items scope lets in (trap guards, host mode, rules, depth, URL length), their URLs cleaned
    (``scope.strip_query_params``: the fingerprint follows the cleaned URL)."""
    kept = []
    for item in items:
        url = scope.clean(item.url)
        if url is not item.url:
            item = replace(item, url=url, fp=fingerprint(url))
        rejected = scope.reject_requisite(item.url) if is_requisite(item) else scope.reject(item.url, item.depth)
        if rejected is None:
            kept.append(item)
    return kept


def seed_items(urls: Iterable[str], scope: Scope, opic: bool = False) -> list[CrawlItem]:
    """The in-scope seeds as items (with ``SEED_CASH`` each under OPIC)."""
    priority = -SEED_CASH if opic else 0.0
    return make_items([CrawlItem(u, fingerprint(u), depth=0, priority=priority) for u in urls], scope)


def log_entry(
    item: CrawlItem,
    result: FetchResult,
    decision: Decision,
    node: str,
    links: int,
) -> dict[str, object]:
    """The crawl-log line of one attempt (docs/contracts.md)."""
    return {
        "url": item.url,
        "host": host_key(item.url),
        "status": result.status,
        "error": decision.error,
        "bytes": len(result.raw_body),
        "fetched_at": round(result.started_at, 3),
        "kind": item.kind,
        "node": node,
        "depth": item.depth,
        "attempt": item.attempt,
        "retry": decision.retry,
        "elapsed_s": round(result.elapsed_s, 4),
        "content_type": result.content_type or None,
        "redirect": decision.redirect_to,
        "links": links,
        "ip": result.peer_ip,
        "detail": result.error_detail or None,
    }


def unfetched_entry(item: CrawlItem, error: str, node: str, wall: float) -> dict[str, object]:
    """The crawl-log line of a URL that was not requested (robots, dead host, internal error)."""
    return {
        "url": item.url, "host": host_key(item.url), "status": None, "error": error,
        "bytes": 0, "fetched_at": round(wall, 3), "kind": item.kind, "node": node,
        "depth": item.depth, "attempt": item.attempt, "retry": False,
    }


def robots_entry(result: FetchResult, node: str) -> dict[str, object]:
    """The crawl-log line of one robots.txt request."""
    return {
        "url": result.url, "host": host_key(result.url), "status": result.status,
        "error": result.error, "bytes": len(result.raw_body), "fetched_at": round(result.started_at, 3),
        "kind": "robots", "node": node, "retry": False, "elapsed_s": round(result.elapsed_s, 4),
    }


def link_log_args(
    item: CrawlItem, records: list[tuple[str, int, int, str, bool]] | None, host_fp: HostFingerprints
) -> tuple[str, int, int, list[tuple[str, int, int, str, bool]]] | None:
    """What the link log needs of a parsed page, or None when it was not parsed."""
    if records is None:
        return None
    return (item.url, item.fp, host_fp(host_key(item.url)), records)

