"""One crawl node: the composition root's run loop.

A single dispatcher asks the frontier for the next item whose host may be
fetched (:meth:`Frontier.next_ready`), starts one task per fetch under a
semaphore of ``fetch.concurrency``, and sleeps until the frontier's wake time
or until a fetch completes. Every task runs inside one ``TaskGroup``; shutdown
is the 500-lines pattern: stop dispatching, let fetches in flight finish
(bounded by ``drain_timeout_s``), then flush the archive and the frontier.

Robots: every URL is put to the node's robots gate before it is fetched; a host's
robots.txt is fetched in the slot of its first URL (:mod:`webgather.runtime.engine.robots_driver`).
Sitemaps: fetched, parsed and routed a few at a time, their URLs in batches, abandoned at a
stop (:mod:`webgather.runtime.engine.sitemap_route`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from webgather.errors import Fenced, WriteFailed
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision, decide
from webgather.runtime.engine.gc_pace import crawl_pace
from webgather.runtime.engine.parts import NodeParts
from webgather.runtime.engine.pipeline import (
    Extracted, HostFingerprints, RoutedUrls, extract_parsed, link_log_args, log_entry, seed_items, unfetched_entry,
)
from webgather.runtime.engine.robots_driver import RobotsDriver
from webgather.runtime.engine.sitemap_route import SitemapRoutes

if TYPE_CHECKING:
    from webgather.recrawl.hooks import FetchHooks

__all__ = ["CrawlNode"]

Router = Callable[[list[CrawlItem], float], list[CrawlItem]]
"""Takes scope-checked items, returns the ones that were new at this node."""


class CrawlNode:
    """Runs the crawl of the buckets this node owns until its frontier is empty."""

    def __init__(self, parts: NodeParts, *, router: Router | None = None, drain_timeout_s: float = 5.0,
                 linger: bool = False, after_route: Callable[[], Awaitable[None]] | None = None,
                 hooks: FetchHooks | None = None, page_permit: Callable[[int], bool] | None = None) -> None:
        """``linger`` keeps the dispatcher waiting for work when the frontier is empty or no
        page may start (a cluster node, one-node crawls included, ends by :meth:`stop`);
        ``after_route`` is awaited after a page's links are routed and before the page completes
        (a cluster node waits there until its cross URLs are sent). ``hooks``: the
        re-crawl's conditional requests and archiving (:mod:`webgather.recrawl.hooks`).
        ``page_permit(used)``: may one more fetch start (``used``: pages plus fetches running)?
        The one page gate: ``max_pages`` (crawl-wide permits, ``runtime.member.permits``; on the
        in-process backend that is this node's own count), a cycle's budget grant
        (``runtime.member.budget``), a one-node re-crawl's budget left. If not, a lingering node
        waits for :meth:`wake`; another ends. Signals are the caller's (``runtime.engine.signals``)."""
        self.parts = parts
        self.node_id = parts.node_id
        self.stats = parts.stats
        self._route: Router = router or self.add_local
        self._drain_timeout_s = drain_timeout_s
        self._wakeup = asyncio.Event()
        self._stopping = False
        self._active: set[asyncio.Task[None]] = set()
        self._host_fp = HostFingerprints()
        self._routed = RoutedUrls()
        self._opic = parts.config.frontier.order == "opic"
        self._slots = asyncio.Semaphore(parts.config.fetch.concurrency)
        self._linger = linger
        self._after_route = after_route
        self._hooks = hooks
        self._page_permit = page_permit
        self._page_hooks = parts.page_hooks
        self._sitemaps = SitemapRoutes(self._route, after_route=after_route, keep=None if parts.page_hooks is None
                                       else parts.page_hooks.keep_links)
        self._robots = RobotsDriver(parts, self._route, self._wakeup.set, hooks, self.fail)
        self.robots_busy = self._robots.busy
        """Hosts whose robots.txt request is under way."""
        self.failure: WriteFailed | None = None
        """The write that stopped the crawl (disk full): :meth:`run` raises it."""

    # -- routing ------------------------------------------------------------
    def add_local(self, items: list[CrawlItem], now: float) -> list[CrawlItem]:
        """Seen-test and enqueue items this node owns."""
        fresh = self.parts.frontier.add(items, now)
        self.stats.urls_new += len(fresh)
        if fresh:
            self._wakeup.set()
        return fresh

    def add_seeds(self, seeds: Sequence[str]) -> int:
        items = seed_items(seeds, self.parts.scope, self._opic)
        return len(self._route(items, self.parts.clock.monotonic()))

    # -- cluster hooks --------------------------------------------------------
    def idle(self) -> bool:
        """Nothing queued, nothing in flight, no robots.txt pending."""
        return self._finished()

    def quiet(self) -> bool:
        """Nothing in flight and no robots.txt pending (items may be queued)."""
        return not self._active and self._robots.pending == 0

    def wake(self) -> None:
        self._wakeup.set()

    def forget_hosts(self, hosts: Iterable[str]) -> None:
        """These hosts moved to another node: forget their robots state here
        (a robots retry scheduled for one of them is dropped)."""
        self._routed.clear()  # buckets changed hands: route every URL afresh once
        self._robots.forget(hosts)

    def adopt_hosts(self, hosts: Iterable[tuple[str, str, float]]) -> None:
        """``(host, sample url, wait_s)`` of hosts whose queued items arrived by hand-off:
        fetch their robots.txt once ``wait_s`` has passed (the politeness gap after the
        previous owner's last request)."""
        self._routed.clear()
        self._robots.adopt(hosts)
        self._wakeup.set()

    # -- lifecycle ----------------------------------------------------------
    def stop(self) -> None:
        """Stop dispatching; fetches in flight finish, state is flushed. A sitemap waiting, being
        fetched, parsed or routed is abandoned at once (it stays in flight: fetched again on resume)."""
        self._stopping = True
        self._sitemaps.abandon()
        self._wakeup.set()

    def fail(self, exc: WriteFailed) -> None:
        """A write failed: stop. Items in flight stay so in the frontier (fetched again on resume)."""
        self.failure = self.failure or exc
        self.stop()

    async def run(self) -> None:
        """Crawl until the frontier is empty, max_pages is reached, or stop()."""
        with crawl_pace():  # fewer young-generation GC passes (runtime.engine.gc_pace)
            async with asyncio.TaskGroup() as group:
                await self._dispatch(group)
                await self._drain()
        if self.failure is not None:
            raise self.failure

    def running(self) -> int:
        """Fetches under way (a task that just ended stays in _active until its done-callback runs)."""
        return sum(not t.done() for t in self._active)

    def _page_budget_left(self) -> bool:
        permit = self._page_permit
        return permit is None or permit(self.stats.pages + self.running())

    async def _dispatch(self, group: asyncio.TaskGroup) -> None:
        frontier, clock = self.parts.frontier, self.parts.clock
        while not self._stopping:
            if not self._page_budget_left():
                if not self._linger:
                    return
                await self._sleep_until(math.inf)  # until a fetch ends or permits/budget arrive (wake)
                continue
            item, wake_at = frontier.next_ready(clock.monotonic())
            if item is None:
                if self._finished() and not self._linger:
                    return
                await self._sleep_until(wake_at)
                continue
            if item.kind == "sitemap":  # it waits for its turn holding no fetch slot (runtime.engine.sitemap_route)
                task = group.create_task(self._process_sitemap(item))
            else:
                await self._slots.acquire()
                task = group.create_task(self._process(item))
            self._active.add(task)
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._active.discard(task)
        self._wakeup.set()

    def _finished(self) -> bool:
        return not self._active and self._robots.pending == 0 and self.parts.frontier.is_done()

    async def _sleep_until(self, wake_at: float) -> None:
        delay = wake_at - self.parts.clock.monotonic()
        self._wakeup.clear()
        if delay <= 0:
            await asyncio.sleep(0)
            return
        handle = asyncio.get_running_loop().call_later(min(delay, 3600.0) if math.isfinite(delay) else 3600.0, self._wakeup.set)
        try:
            await self._wakeup.wait()
        finally:
            handle.cancel()

    async def _drain(self) -> None:
        if self._active:
            _done, pending = await asyncio.wait(set(self._active), timeout=self._drain_timeout_s)
            for task in pending:
                task.cancel()  # its item stays in flight in the frontier: fetched again on resume

    # -- one fetch ------------------------------------------------------------
    async def _process_sitemap(self, item: CrawlItem) -> None:
        """:meth:`_process` in one of the node's sitemap turns, then a fetch slot (each waited for
        holding nothing else); abandoned at a stop until it is archived."""
        async with self._sitemaps.turn():
            with self._sitemaps.abandonable():
                await self._slots.acquire()
            await self._process(item)

    async def _process(self, item: CrawlItem) -> None:
        try:
            await self._fetch_and_handle(item)
        except Fenced:  # not sent: its bucket moved while this node was past its lease; the item goes with it
            self.parts.frontier.retry(replace(item, attempt=item.attempt - 1), self.parts.clock.monotonic(),
                                      not_before=0.0, error=False)
        except Exception as exc:  # worker top loop: one bad page must not end the crawl
            await self._record_internal_error(item, exc)
        finally:
            self._slots.release()
            self._wakeup.set()

    async def _fetch_and_handle(self, item: CrawlItem) -> None:
        parts = self.parts
        if not await self._robots.admits(item):  # denied and recorded, or back in its queue
            return
        with self._sitemaps.abandonable(item.kind):
            if self._hooks is None:
                result = await parts.http.fetch(item.url)
            else:
                result = await parts.http.fetch(item.url, headers=self._hooks.request_headers(item))
        await self._handle(item, result)

    async def _handle(self, item: CrawlItem, result: FetchResult) -> None:
        parts, clock = self.parts, self.parts.clock
        decision = decide(item, result, parts.config, clock.wall())
        self.stats.record_attempt(result.elapsed_s)
        now = clock.monotonic()
        if decision.retry:
            self.stats.retries += 1
            await parts.writer.write(result, log_entry(item, result, decision, self.node_id, 0), None)
            parts.frontier.retry(item, now, not_before=now + decision.retry_in_s, retry_after_s=decision.retry_after_s)
            return
        # The host may go again now; the page itself completes once its links and log line are stored.
        parts.frontier.release_host(item, now, response_time_s=result.elapsed_s, error=decision.host_error,
                                    retry_after_s=decision.retry_after_s)
        self._wakeup.set()
        view, dom, decision = await self._rendered(item, result, decision)
        with self._sitemaps.abandonable(item.kind):  # a sitemap's parse and routing: cancelled at a stop
            extracted, decision, entry = await self._extract_and_route(item, result, view, decision, now)
        links = link_log_args(item, extracted.link_records, self._host_fp)
        if self._hooks is None:
            await parts.writer.write(result, entry, links, dom)
        else:
            await self._hooks.store(item, result, entry, links, extracted.text, dom)
        self.stats.record_page(clock.wall(), result.status, decision.error, len(result.raw_body), item.url,
                               item.kind)
        parts.frontier.complete(item, clock.monotonic())

    async def _extract_and_route(self, item: CrawlItem, result: FetchResult, view: FetchResult, decision: Decision,
                                 now: float) -> tuple[Extracted, Decision, dict[str, object]]:
        """Parse ``view``, route what it yields (a sitemap's URLs in batches); the decision after the
        parse and the hooks, and the crawl-log entry."""
        parts, page_hooks = self.parts, self._page_hooks
        extracted, decision = await extract_parsed(parts.parser, item, view, decision, parts.scope, self._host_fp,
                                                   self._routed, want_text=self._hooks is not None, opic=self._opic,
                                                   keep_page=page_hooks is not None and page_hooks.wants_page)
        hook_failure = None
        if page_hooks is not None:  # the user's on_page / on_link (runtime.engine.page_hooks)
            decision, hook_failure = page_hooks.apply(item, view, decision, extracted, parts.scope)
        self._route(extracted.items, now)
        if extracted.sitemap is not None:
            failed = await self._sitemaps.route(extracted.sitemap, now)
            extracted.sitemap = None
            if failed is not None and page_hooks is not None:
                decision, hook_failure = page_hooks.failed(item, decision, failed)
        elif self._after_route is not None:
            await self._after_route()
        self.stats.links_found += extracted.links_found
        entry = log_entry(item, result, decision, self.node_id, extracted.links_found)
        if hook_failure is not None:
            entry["detail"] = hook_failure
        return extracted, decision, entry

    async def _rendered(self, item: CrawlItem, result: FetchResult, decision: Decision
                        ) -> tuple[FetchResult, bytes | None, Decision]:
        """The page to parse (rendered in the browser when a ``[render]`` rule matches: runtime.engine.render_stage),
        its rendered DOM to archive (or None), and the decision (a failed render's error kind)."""
        if self.parts.render is None:
            return result, None, decision
        rendered = await self.parts.render.render(item, result, decision, self.parts.http)
        return rendered.result, rendered.dom, rendered.decision

    async def _record_internal_error(self, item: CrawlItem, exc: Exception) -> None:
        parts = self.parts
        if isinstance(exc, WriteFailed):  # the page is not done: it stays in flight
            self.fail(exc)
            return
        entry = unfetched_entry(item, "internal", self.node_id, parts.clock.wall())
        entry["detail"] = f"{type(exc).__name__}: {exc}"[:300]
        try:
            await parts.writer.log(entry)
        finally:
            self.stats.errors["internal"] += 1
            parts.frontier.complete(item, parts.clock.monotonic(), error=True)
