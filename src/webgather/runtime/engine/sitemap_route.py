"""Sitemaps through a node: a few at a time, their URLs in bounded batches, abandoned at a stop.

A sitemap lists up to 50,000 URLs in up to 50 MB. Made crawl items, scope-checked and routed
in one call, they held the event loop for about a second (0.93 s on an idle core, more on a
loaded one) and a node's memory for 50,000 items per sitemap at once; with as many sitemaps
fetched at once as the node had fetch slots, eight hosts' sitemap indexes took a node to
445 MiB, and SIGTERM waited for every burst under way (6 s). Here (:class:`SitemapRoutes`):

* at most :data:`SITEMAP_TURNS` sitemaps are fetched, parsed and routed at once on a node
  (:meth:`SitemapRoutes.turn`): the bodies and parsed locations of the others are not held.
  One waiting for its turn holds no fetch slot (the node's pages go on) and no body;
* a sitemap's locations are made items, scope-checked, filtered by ``on_link`` and routed
  :data:`SITEMAP_BATCH` at a time (:class:`~webgather.runtime.engine.pipeline.SitemapLocations`),
  the loop serviced between batches (fetches, timers, signals) and, in a cluster, each
  batch's cross URLs sent before the next is made;
* :meth:`SitemapRoutes.abandon` (the node stops) cancels at once every sitemap waiting for its
  turn, being fetched, parsed or routed (:meth:`SitemapRoutes.abandonable`; never one being
  archived): it stays in flight in the frontier and is fetched again on resume (the URLs it
  had routed stay queued; the seen-test drops them the second time).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

from webgather.frontier.model import CrawlItem
from webgather.runtime.engine.pipeline import SitemapLocations

__all__ = ["SITEMAP_BATCH", "SITEMAP_TURNS", "SitemapRoutes"]

SITEMAP_BATCH = 1_000
"""Locations made items and routed in one go: about 20 ms of the loop (idle core)."""
SITEMAP_TURNS = 4
"""Sitemaps fetched, parsed and routed at once on a node (some fetch or parse while one routes)."""

Route = Callable[[list[CrawlItem], float], object]
Keep = Callable[[list[CrawlItem]], tuple[list[CrawlItem], str | None]]
"""``on_link`` over a batch: the items kept, and the one-line failure if the hook raised (all kept)."""


class SitemapRoutes:
    """Routes parsed sitemaps' locations for one node (module docstring)."""

    def __init__(self, route: Route, *, after_route: Callable[[], Awaitable[None]] | None = None,
                 keep: Keep | None = None, batch: int | None = None, turns: int | None = None) -> None:
        """``route``: the node's router (items, now); ``after_route``: awaited after each batch (a
        cluster node's wait until its cross URLs are sent); ``keep``: the ``on_link`` hook; ``batch``,
        ``turns``: :data:`SITEMAP_BATCH`, :data:`SITEMAP_TURNS` unless given."""
        self._route, self._after_route, self._keep = route, after_route, keep
        self._batch = SITEMAP_BATCH if batch is None else batch
        self._turns = asyncio.Semaphore(SITEMAP_TURNS if turns is None else turns)
        self._abandonable: set[asyncio.Task[object]] = set()

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """One of the node's sitemap turns, for a sitemap's fetch, parse, routing and archiving
        (abandonable while it waits)."""
        with self.abandonable():
            await self._turns.acquire()
        try:
            yield
        finally:
            self._turns.release()

    @contextmanager
    def abandonable(self, kind: str = "sitemap") -> Iterator[None]:
        """Within: the running task is cancelled by :meth:`abandon` (a no-op unless ``kind`` is "sitemap")."""
        task = asyncio.current_task() if kind == "sitemap" else None
        if task is None:
            yield
            return
        self._abandonable.add(task)
        try:
            yield
        finally:
            self._abandonable.discard(task)

    def abandon(self) -> None:
        """Cancel every sitemap waiting for its turn, being fetched, parsed or routed (the node stops)."""
        for task in list(self._abandonable):
            task.cancel()

    async def route(self, locations: SitemapLocations, now: float) -> str | None:
        """Route ``locations`` a batch at a time; the ``on_link`` failure, if the hook raised."""
        failure: str | None = None
        for items in locations.batches(self._batch):
            if self._keep is not None and items:
                items, failed = self._keep(items)
                failure = failure or failed
            if items:
                self._route(items, now)
                if self._after_route is not None:
                    await self._after_route()
            await asyncio.sleep(0)  # the loop's turn: fetches, timers and signals between batches
        return failure
