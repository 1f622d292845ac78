"""One crawl node: the composition root's run loop.

A single dispatcher asks the frontier for the next item whose host may be
fetched (:meth:`Frontier.next_ready`), starts one task per fetch under a
semaphore of ``fetch.concurrency``, and sleeps until the frontier's wake time
or until a fetch completes. Every task runs inside one ``TaskGroup``; shutdown
is the 500-lines pattern: stop dispatching, let fetches in flight finish
(bounded by ``drain_timeout_s``), then flush the archive and the frontier.

Robots: the first time a host appears, its robots.txt is fetched and the host
is deferred in the frontier until it is known (see :mod:`webgather.runtime.robots`).
"""

from __future__ import annotations

import asyncio
import math
import signal
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from webgather.errors import WebgatherError
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import decide
from webgather.runtime.parts import NodeParts
from webgather.runtime.pipeline import (
    HostFingerprints, RoutedUrls, extract, link_log_args, log_entry, make_items, robots_entry, unfetched_entry,
)
from webgather.runtime.robots import fetch_robots
from webgather.urls import canonicalize, fingerprint, host_key, hostname

if TYPE_CHECKING:
    from webgather.recrawl.hooks import FetchHooks

__all__ = ["CrawlNode"]

Router = Callable[[list[CrawlItem], float], list[CrawlItem]]
"""Takes scope-checked items, returns the ones that were new at this node."""


class CrawlNode:
    """Runs the crawl of the buckets this node owns until its frontier is empty."""

    def __init__(self, parts: NodeParts, *, router: Router | None = None, drain_timeout_s: float = 5.0,
                 linger: bool = False, handle_signals: bool = True,
                 after_route: Callable[[], Awaitable[None]] | None = None,
                 hooks: FetchHooks | None = None, page_permit: Callable[[int], bool] | None = None) -> None:
        """Cluster hooks (defaults: one node): ``linger`` keeps the dispatcher waiting for
        work when the frontier is empty (a cluster node ends by :meth:`stop`);
        ``handle_signals`` False leaves SIGINT/SIGTERM to the caller; ``after_route``
        is awaited after a page's links are routed and before the page completes
        (a cluster node waits there until its cross URLs are sent). ``hooks``: the
        re-crawl's conditional requests and archiving (:mod:`webgather.recrawl.hooks`).
        ``page_permit(used)``: may one more fetch start (``used``: pages plus fetches running)?
        If not, the dispatcher waits for :meth:`wake` (a cluster: crawl-wide ``max_pages``
        permits, ``runtime.cluster_permits``; a cycle's budget grant, ``runtime.cluster_budget``)."""
        self.parts = parts
        self.node_id = parts.node_id
        self.stats = parts.stats
        self._route: Router = router or self.add_local
        self._drain_timeout_s = drain_timeout_s
        self._wakeup = asyncio.Event()
        self._stopping = False
        self._active: set[asyncio.Task[None]] = set()
        self._robots_started: set[str] = set()
        self._robots_pending = 0
        self._dead_hosts: dict[str, str] = {}
        self._host_fp = HostFingerprints()
        self._routed = RoutedUrls()
        self._slots = asyncio.Semaphore(parts.config.fetch.concurrency)
        self._linger = linger
        self._handle_signals = handle_signals
        self._after_route = after_route
        self._hooks = hooks
        self._page_permit = page_permit
        self.robots_busy: set[str] = set()
        """Hosts whose robots.txt request is under way."""

    # -- routing ------------------------------------------------------------
    def add_local(self, items: list[CrawlItem], now: float) -> list[CrawlItem]:
        """Seen-test and enqueue items this node owns; start robots for new hosts."""
        fresh = self.parts.frontier.add(items, now)
        self.stats.urls_new += len(fresh)
        for item in fresh:
            host = host_key(item.url)
            if host not in self._robots_started:
                self._start_robots(host, item.url)
        if fresh:
            self._wakeup.set()
        return fresh

    def add_seeds(self, seeds: Sequence[str]) -> int:
        items = [CrawlItem(u, fingerprint(u), depth=0) for u in seeds]
        items = make_items(items, self.parts.scope)
        return len(self._route(items, self.parts.clock.monotonic()))

    # -- cluster hooks --------------------------------------------------------
    def idle(self) -> bool:
        """Nothing queued, nothing in flight, no robots.txt pending."""
        return self._finished()

    def quiet(self) -> bool:
        """Nothing in flight and no robots.txt pending (items may be queued)."""
        return not self._active and self._robots_pending == 0

    def wake(self) -> None:
        self._wakeup.set()

    def forget_hosts(self, hosts: Iterable[str]) -> None:
        """These hosts moved to another node: forget their robots state here
        (a robots retry scheduled for one of them is dropped)."""
        self._routed.clear()  # buckets changed hands: route every URL afresh once
        for host in hosts:
            self._robots_started.discard(host)
            self._dead_hosts.pop(host, None)

    def adopt_hosts(self, hosts: Iterable[tuple[str, str, float]]) -> None:
        """``(host, sample url, wait_s)`` of hosts whose queued items arrived by hand-off:
        fetch their robots.txt once ``wait_s`` has passed (the politeness gap after the
        previous owner's last request)."""
        self._routed.clear()
        for host, sample_url, wait_s in hosts:
            if host in self._robots_started:
                continue
            if wait_s <= 0:
                self._start_robots(host, sample_url)
                continue
            self._robots_started.add(host)
            self._robots_pending += 1  # owed by the delayed start, as for a robots retry
            self.parts.frontier.defer_host(host, math.inf)
            origin = sample_url[: sample_url.index("//") + 2] + host
            asyncio.get_running_loop().call_later(min(wait_s, 3600.0), self._retry_robots, host, origin)
        self._wakeup.set()

    # -- lifecycle ----------------------------------------------------------
    def stop(self) -> None:
        """Stop dispatching; fetches in flight finish, state is flushed."""
        self._stopping = True
        self._wakeup.set()

    async def run(self) -> None:
        """Crawl until the frontier is empty, max_pages is reached, or stop()."""
        loop = asyncio.get_running_loop()
        if self._handle_signals:
            self._signals(loop, install=True)
        self._resume_hosts()
        try:
            async with asyncio.TaskGroup() as group:
                await self._dispatch(group)
                await self._drain()
        finally:
            if self._handle_signals:
                self._signals(loop, install=False)

    def _signals(self, loop: asyncio.AbstractEventLoop, install: bool) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                if install:
                    loop.add_signal_handler(sig, self.stop)
                else:
                    loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not the main thread (tests): the caller stops us instead

    def _resume_hosts(self) -> None:
        """After a restart, queued hosts need their robots.txt again."""
        for host, sample_url in self.parts.frontier.queued_hosts():
            if host not in self._robots_started:
                self._start_robots(host, sample_url)

    def running(self) -> int:
        """Fetches under way (a task that just ended stays in _active until its done-callback runs)."""
        return sum(not t.done() for t in self._active)

    def _page_budget_left(self) -> bool:
        limit, permit = self.parts.config.max_pages, self._page_permit  # per dispatch: count only if limited
        used = self.stats.pages + self.running() if limit is not None or permit is not None else 0
        return (limit is None or used < limit) and (permit is None or permit(used))

    async def _dispatch(self, group: asyncio.TaskGroup) -> None:
        frontier, clock = self.parts.frontier, self.parts.clock
        while not self._stopping:
            if not self._page_budget_left():
                if self._page_permit is None:
                    return
                await self._sleep_until(math.inf)  # until a fetch ends or permits/budget arrive (wake)
                continue
            item, wake_at = frontier.next_ready(clock.monotonic())
            if item is None:
                if self._finished() and not self._linger:
                    return
                await self._sleep_until(wake_at)
                continue
            await self._slots.acquire()
            task = group.create_task(self._process(item))
            self._active.add(task)
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._active.discard(task)
        self._wakeup.set()

    def _finished(self) -> bool:
        return not self._active and self._robots_pending == 0 and self.parts.frontier.is_done()

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
    async def _process(self, item: CrawlItem) -> None:
        try:
            await self._fetch_and_handle(item)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # worker top loop: one bad page must not end the crawl
            await self._record_internal_error(item, exc)
        finally:
            self._slots.release()
            self._wakeup.set()

    async def _fetch_and_handle(self, item: CrawlItem) -> None:
        parts = self.parts
        host = host_key(item.url)
        dead = self._dead_hosts.get(host)
        rules = parts.robots.rules_for(host)
        if dead is not None or (rules is not None and not rules.allowed(item.url)):
            await self._record_unfetched(item, dead or "robots", release_host=True)
            return
        if self._hooks is None:
            result = await parts.http.fetch(item.url)
        else:
            result = await parts.http.fetch(item.url, headers=self._hooks.request_headers(item))
        await self._handle(item, result)

    async def _handle(self, item: CrawlItem, result: FetchResult) -> None:
        parts, clock = self.parts, self.parts.clock
        decision = decide(item, result, parts.config, clock.wall())
        self.stats.attempts += 1
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
        extracted = extract(item, result, decision, parts.scope, self._host_fp, self._routed,
                            want_text=self._hooks is not None)
        self.stats.links_found += extracted.links_found
        entry = log_entry(item, result, decision, self.node_id, extracted.links_found)
        self._route(extracted.items, now)
        if self._after_route is not None:
            await self._after_route()
        links = link_log_args(item, extracted.link_records, self._host_fp)
        if self._hooks is None:
            await parts.writer.write(result, entry, links)
        else:
            await self._hooks.store(item, result, entry, links, extracted.text)
        self.stats.record_page(clock.wall(), result.status, decision.error, len(result.raw_body))
        parts.frontier.complete(item, clock.monotonic())

    async def _record_unfetched(self, item: CrawlItem, error: str, *, release_host: bool) -> None:
        parts = self.parts
        entry = unfetched_entry(item, error, self.node_id, parts.clock.wall())
        await parts.writer.log(entry)
        self.stats.errors[error] += 1
        if self._hooks is not None:
            self._hooks.unfetched(item, error)
        if release_host:
            parts.frontier.complete(item, parts.clock.monotonic(), response_time_s=None, skipped=True)

    async def _record_internal_error(self, item: CrawlItem, exc: Exception) -> None:
        parts = self.parts
        entry = unfetched_entry(item, "internal", self.node_id, parts.clock.wall())
        entry["detail"] = f"{type(exc).__name__}: {exc}"[:300]
        try:
            await parts.writer.log(entry)
        finally:
            self.stats.errors["internal"] += 1
            parts.frontier.complete(item, parts.clock.monotonic(), error=True)

    # -- robots -------------------------------------------------------------
    def _start_robots(self, host: str, sample_url: str) -> None:
        self._robots_started.add(host)
        self._robots_pending += 1
        self.parts.frontier.defer_host(host, math.inf)
        origin = sample_url[: sample_url.index("//") + 2] + host
        asyncio.get_running_loop().create_task(self._robots_task(host, origin))

    async def _robots_task(self, host: str, origin: str) -> None:
        self.robots_busy.add(host)
        try:
            await self._fetch_robots_once(host, origin)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # worker top loop: a robots failure must not end the crawl
            self._drop_host(host, "robots_unavailable", f"{type(exc).__name__}: {exc}")
        finally:
            self.robots_busy.discard(host)
            self._robots_pending -= 1
            self._wakeup.set()

    async def _fetch_robots_once(self, host: str, origin: str) -> None:
        parts = self.parts
        if parts.config.robots.obey is False:
            parts.robots.set_allow_all(host)
            parts.frontier.defer_host(host, parts.clock.monotonic())
            return
        await self._learn_ip(host)
        known = self._hooks.cached_robots(host) if self._hooks is not None else None
        if known is not None:  # a re-crawl cycle reuses rules fetched within robots.ttl_s
            await self._apply_robots(host, origin, known, False)
            return
        outcome = await fetch_robots(
            origin, parts.http.fetch, parts.config.fetch.user_agent, parts.config.robots.max_bytes,
            hop_delay_s=parts.config.politeness.min_delay_s,
        )
        for result in outcome.results:
            self.stats.robots_fetches += 1
            await parts.writer.write(result, robots_entry(result, self.node_id), None)
        if self._hooks is not None and outcome.rules is not None:
            self._hooks.robots_fetched(host, outcome.results[-1])
        await self._apply_robots(host, origin, outcome.rules, outcome.dns_failed)

    async def _learn_ip(self, host: str) -> None:
        try:
            ip = await self.parts.resolver.resolve(hostname("http://" + host + "/"))
        except WebgatherError:  # a DNS failure shows up again, classified, in the robots fetch
            return
        self.parts.frontier.set_host_ip(host, ip)

    async def _apply_robots(self, host: str, origin: str, rules: Any, dns_failed: bool) -> None:
        parts, now = self.parts, self.parts.clock.monotonic()
        if dns_failed:
            self._drop_host(host, "dns", "host does not resolve")
            return
        if rules is None:
            if parts.robots.record_failure(host, now):
                self._drop_host(host, "robots_unavailable", "robots.txt failed repeatedly")
            else:
                self._robots_pending += 1  # the retry below still owes the host an answer
                retry_s = max(parts.config.robots.error_retry_s, parts.config.politeness.min_delay_s)
                asyncio.get_running_loop().call_later(retry_s, self._retry_robots, host, origin)
            return
        parts.robots.record_rules(host, rules, now)
        delay = min(rules.crawl_delay_s or 0.0, parts.config.politeness.max_crawl_delay_s)
        if delay:
            parts.frontier.set_crawl_delay(host, delay)
        parts.frontier.defer_host(host, now + max(delay, parts.config.politeness.min_delay_s))
        self._enqueue_sitemaps(rules.sitemaps)

    def _retry_robots(self, host: str, origin: str) -> None:
        # the pending count taken when this retry was scheduled passes to the new task
        if host not in self._robots_started:  # the host moved to another node (forget_hosts)
            self._robots_pending -= 1
            self._wakeup.set()
            return
        asyncio.get_running_loop().create_task(self._robots_task(host, origin))

    def _enqueue_sitemaps(self, sitemaps: Sequence[str]) -> None:
        items = []
        for raw in sitemaps:
            url = canonicalize(raw)
            if url is not None:
                items.append(CrawlItem(url, fingerprint(url), depth=0, kind="sitemap"))
        self._route(make_items(items, self.parts.scope), self.parts.clock.monotonic())

    def _drop_host(self, host: str, error: str, detail: str) -> None:
        self._dead_hosts[host] = error
        dropped = self.parts.frontier.drop_host(host)
        # URLs of the host found later flow through dispatch and are logged with the same error
        self.parts.frontier.defer_host(host, self.parts.clock.monotonic())
        wall = self.parts.clock.wall()
        for item in dropped:
            entry = unfetched_entry(item, error, self.node_id, wall)
            entry["detail"] = detail
            self.parts.writer.log_nowait(entry)
            self.stats.errors[error] += 1
            if self._hooks is not None:
                self._hooks.unfetched(item, error)

