"""Page requisites as crawl items: what a page (or a stylesheet) needs to be shown.

A requisite is fetched and archived like a page but is not one: its links are not
followed, it is not in the link graph, and the summary counts it apart. Its kind says how
many requisite hops it is after the last page (:func:`webgather.frontier.model.requisite_kind`,
Heritrix's "E" hops): a stylesheet of a page is "requisite", an image that stylesheet
loads "requisite2", bounded by ``[scope] requisite_hops``. A requisite keeps its page's
depth and breadth-first priority, so it is fetched about when its page's siblings are,
before the page's own links; under OPIC (a negative priority is cash) it carries none
(priority 0). Scope: :meth:`webgather.scope.Scope.reject_requisite` (another host is in
by default; depth does not apply). Only a stylesheet (``text/css``, 2xx) is read for
requisites of its own, inline on the loop: a 20 KB stylesheet took ~4 ms
(bench/requisite_cost.py); one past :data:`MAX_STYLESHEET_BYTES` is read up to that size.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem, requisite_hops, requisite_kind
from webgather.parse.requisites import Requisite, stylesheet_requisites
from webgather.scope import Scope
from webgather.urls import fingerprint, host_key

__all__ = ["MAX_STYLESHEET_BYTES", "is_requisite", "requisite_items", "stylesheet_items", "wants_requisites"]

MAX_STYLESHEET_BYTES = 1 << 20


class Remembers(Protocol):
    """What :class:`webgather.runtime.engine.pipeline.RoutedUrls` offers."""

    @property
    def young(self) -> dict[str, tuple[int, int]]: ...

    def get(self, url: str) -> tuple[int, int] | None: ...

    def remember(self, url: str, fps: tuple[int, int]) -> None: ...


def is_requisite(item: CrawlItem) -> bool:
    return item.kind.startswith("requisite")


def wants_requisites(item: CrawlItem, scope: Scope) -> bool:
    """Are ``item``'s requisites fetched (requisites on, and a hop left after it)?"""
    config = scope.config
    return config.requisites and requisite_hops(item.kind) < config.requisite_hops


def requisite_items(item: CrawlItem, found: Iterable[Requisite], scope: Scope, routed: Remembers) -> list[CrawlItem]:
    """The new, in-scope requisites of ``item`` among ``found`` ((URL, where) pairs), as items to route."""
    if not wants_requisites(item, scope):
        return []
    kind = requisite_kind(requisite_hops(item.kind) + 1)
    priority = max(item.priority, 0.0)  # OPIC's cash is the page's links', not its images'

    clean = scope.clean
    items = []
    for href, _where in found:
        url = clean(href)
        if routed.young.get(url) is not None or routed.get(url) is not None:
            continue
        if scope.reject_requisite(url) is not None:
            continue
        fps = (fingerprint(url), fingerprint(host_key(url)))
        routed.remember(url, fps)
        items.append(CrawlItem(url, fps[0], item.depth, 0, 0, priority, kind))
    return items


def stylesheet_items(item: CrawlItem, result: FetchResult, scope: Scope,
                     routed: Remembers) -> tuple[list[CrawlItem], int]:
    """A fetched requisite's own requisites (a stylesheet's imports, fonts, images), and how many it names."""
    if not (result.status is not None and 200 <= result.status < 300 and result.error is None
            and result.content_type == "text/css" and wants_requisites(item, scope)):
        return [], 0
    found = stylesheet_requisites(item.url, result.body[:MAX_STYLESHEET_BYTES], result.header("Content-Type"))
    return requisite_items(item, found, scope, routed), len(found)
