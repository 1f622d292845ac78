"""Carries out the robots gate's answers for one crawl node (the IO around ``robots.gate``).

The gate (:class:`webgather.robots.gate.RobotsGate`, ``parts.robots``) decides;
this module acts: it fetches robots.txt (:func:`webgather.runtime.robots.fetch_robots`),
archives and logs every robots request (``robots_entry``), holds a host's URLs
in the frontier while its robots.txt is owed (``frontier.defer_host``), applies
Crawl-delay, enqueues ``Sitemap:`` URLs, and records the URLs the gate denies.

Retries need no timer: a host whose robots.txt failed is deferred in the
frontier until the gate's retry time; its next URL then comes up for dispatch,
and the gate answers "fetch robots first". So expired and evicted rules take the
same path: the URL goes back to its queue, unchanged, robots.txt is fetched,
and the URL is asked about again. The first failure of a host is logged once
(``logging.warning``); after ``robots.max_tries`` the host's URLs get the
crawl-log error ``robots_unavailable`` with the last failure as ``detail``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from webgather.errors import Fenced, WebgatherError, WriteFailed
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.robots.gate import Allow, Dead, Deny, FetchRobots, RobotsGate, Wait, Waiting
from webgather.robots.parse import RobotsRules
from webgather.runtime.parts import NodeParts
from webgather.runtime.pipeline import make_items, robots_entry, unfetched_entry
from webgather.runtime.robots import fetch_robots
from webgather.urls import canonicalize, fingerprint, host_key, hostname

if TYPE_CHECKING:
    from webgather.recrawl.hooks import FetchHooks

__all__ = ["RobotsDriver"]

log = logging.getLogger(__name__)

Route = Callable[[list[CrawlItem], float], list[CrawlItem]]


class RobotsDriver:
    """The node's robots.txt work: see the module docstring."""

    def __init__(self, parts: NodeParts, route: Route, wake: Callable[[], None], hooks: FetchHooks | None,
                 write_failed: Callable[[WriteFailed], None], slots: asyncio.Semaphore) -> None:
        """``write_failed``: a robots.txt answer could not be stored (disk full): the node stops.
        ``slots``: the node's ``fetch.concurrency`` slots, which a robots.txt request takes one of too."""
        self.parts = parts
        self._slots = slots
        self._write_failed = write_failed
        self.gate: RobotsGate = parts.robots
        self._route = route
        self._wake = wake
        self._hooks = hooks
        self._tasks: set[asyncio.Task[None]] = set()
        self.pending = 0
        """robots.txt fetches started and not yet applied (the node is not idle meanwhile)."""
        self.busy: set[str] = set()
        """Hosts whose robots.txt request is under way."""

    # -- from the node --------------------------------------------------------
    def admit(self, items: Iterable[CrawlItem]) -> None:
        """Items were queued: fetch robots.txt now for each host of theirs that needs it."""
        now = self.parts.clock.monotonic()
        for host, url in {host_key(item.url): item.url for item in items}.items():
            self._act(host, url, self.gate.admit(host, now))

    def resume(self) -> None:
        """After a restart, queued hosts need their robots.txt again."""
        now = self.parts.clock.monotonic()
        for host, sample_url in self.parts.frontier.queued_hosts():
            self._act(host, sample_url, self.gate.admit(host, now))

    def adopt(self, hosts: Iterable[tuple[str, str, float]]) -> None:
        """``(host, sample url, wait_s)`` of handed-over hosts: robots.txt once ``wait_s`` has passed."""
        now = self.parts.clock.monotonic()
        for host, sample_url, wait_s in hosts:
            self._act(host, sample_url, self.gate.admit(host, now, now + min(wait_s, 3600.0)))

    def forget(self, hosts: Iterable[str]) -> None:
        for host in hosts:
            self.gate.forget(host)

    async def admits(self, item: CrawlItem) -> bool:
        """May ``item`` be fetched now? If not, it was recorded as denied or put back to wait."""
        parts, host = self.parts, host_key(item.url)
        now = parts.clock.monotonic()
        action = self.gate.check(host, item.url, now)
        if isinstance(action, Allow):
            return True
        if isinstance(action, Deny):
            await self._record_denied(item, action)
            return False
        # robots.txt is owed first: the URL goes back to the head of its queue as it was
        # (retry() counts an attempt, and no request was made, so the count is undone first)
        parts.frontier.retry(replace(item, attempt=item.attempt - 1), now, not_before=math.inf, error=False)
        self._act(host, item.url, action)
        return False

    # -- acting on the gate ---------------------------------------------------
    def _act(self, host: str, sample_url: str, action: FetchRobots | Wait | None) -> None:
        if isinstance(action, Wait):
            self.parts.frontier.defer_host(host, action.until)
        elif isinstance(action, FetchRobots):
            self.parts.frontier.defer_host(host, math.inf)
            origin = sample_url[: sample_url.index("//") + 2] + host
            self.pending += 1
            task = asyncio.get_running_loop().create_task(self._robots_task(host, origin))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _robots_task(self, host: str, origin: str) -> None:
        self.busy.add(host)
        try:
            await self._fetch_once(host, origin)
        except Fenced:  # not sent (runtime.cluster_fence): the host is being handed over; back here, asked again
            self.gate.forget(host)
        except WriteFailed as exc:  # not the host's fault: its URLs stay queued for the resume
            self._write_failed(exc)
        except Exception as exc:  # worker top loop: a robots failure must not end the crawl
            now = self.parts.clock.monotonic()
            self._drop(host, self.gate.give_up(host, now, "robots_unavailable", f"{type(exc).__name__}: {exc}"))
        finally:
            self.busy.discard(host)
            self.pending -= 1
            self._wake()

    async def _fetch_once(self, host: str, origin: str) -> None:
        parts, hooks = self.parts, self._hooks
        await self._learn_ip(host)
        known = hooks.cached_robots(host) if hooks is not None else None
        if known is not None:  # a re-crawl cycle reuses rules fetched within robots.ttl_s
            self._learned(host, known)
            return
        async with self._slots:
            outcome = await fetch_robots(
                origin, parts.http.fetch, parts.config.fetch.user_agent, parts.config.robots.max_bytes,
                hop_delay_s=parts.config.politeness.min_delay_s,
            )
        for result in outcome.results:
            parts.stats.robots_fetches += 1
            await parts.writer.write(result, robots_entry(result, parts.node_id), None)
        now = parts.clock.monotonic()
        if outcome.host_error:  # retrying DNS, or an address the guard refuses, for minutes helps nobody
            detail = "host does not resolve" if outcome.host_error == "dns" else "private address refused"
            self._drop(host, self.gate.give_up(host, now, outcome.host_error, detail))
        elif outcome.rules is None:
            self._failed(host, outcome.results[-1], now)
        else:
            if hooks is not None:
                hooks.robots_fetched(host, outcome.results[-1])
            self._learned(host, outcome.rules)

    async def _learn_ip(self, host: str) -> None:
        try:
            ip = await self.parts.resolver.resolve(hostname("http://" + host + "/"))
        except WebgatherError:  # a DNS failure shows up again, classified, in the robots fetch
            return
        self.parts.frontier.set_host_ip(host, ip)

    def _learned(self, host: str, rules: RobotsRules) -> None:
        parts, now = self.parts, self.parts.clock.monotonic()
        self.gate.learned(host, now, rules)
        delay = min(rules.crawl_delay_s or 0.0, parts.config.politeness.max_crawl_delay_s)
        if delay:
            parts.frontier.set_crawl_delay(host, delay)
        parts.frontier.defer_host(host, now + max(delay, parts.config.politeness.min_delay_s))
        self._enqueue_sitemaps(rules.sitemaps)

    def _failed(self, host: str, last: FetchResult, now: float) -> None:
        why = last.error or f"HTTP {last.status}"
        state = self.gate.failed(host, now, why)
        first = state.failures == 1 if isinstance(state, Waiting) else self.gate.max_tries == 1
        if first:
            log.warning("robots.txt of %s unavailable (%s): its URLs wait; %d more tries, then they are dropped",
                        host, why, self.gate.max_tries - 1)
        if isinstance(state, Dead):
            self._drop(host, state)
            return
        self.parts.frontier.defer_host(host, max(state.at, now + self.parts.config.politeness.min_delay_s))

    def _enqueue_sitemaps(self, sitemaps: Sequence[str]) -> None:
        items = []
        for raw in sitemaps:
            url = canonicalize(raw)
            if url is not None:
                items.append(CrawlItem(url, fingerprint(url), depth=0, kind="sitemap"))
        self._route(make_items(items, self.parts.scope), self.parts.clock.monotonic())

    # -- recording ------------------------------------------------------------
    def _drop(self, host: str, dead: Dead) -> None:
        # The host's URLs flow through dispatch, where the gate denies them and each is completed
        # only once its crawl-log line is stored. Removing them here while their lines were still
        # in the writer lost them when the disk filled up before the lines were written.
        self.parts.frontier.defer_host(host, self.parts.clock.monotonic())
        log.info("gave up %s (%s: %s); its queued URLs are logged as denied", host, dead.reason, dead.detail)

    async def _record_denied(self, item: CrawlItem, deny: Deny) -> None:
        parts = self.parts
        await parts.writer.log(self._entry(item, deny.reason, deny.detail, parts.clock.wall()))
        self._count(item, deny.reason)
        parts.frontier.complete(item, parts.clock.monotonic(), response_time_s=None, skipped=True)

    def _entry(self, item: CrawlItem, error: str, detail: str, wall: float) -> dict[str, object]:
        entry = unfetched_entry(item, error, self.parts.node_id, wall)
        if detail:
            entry["detail"] = detail
        return entry

    def _count(self, item: CrawlItem, error: str) -> None:
        self.parts.stats.errors[error] += 1
        if self._hooks is not None:
            self._hooks.unfetched(item, error)
