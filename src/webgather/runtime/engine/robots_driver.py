"""Carries out the robots gate's answers for one crawl node (the IO around ``robots.gate``).

The gate (:class:`webgather.robots.gate.RobotsGate`, ``parts.robots``) decides;
this module acts: it fetches robots.txt (:func:`webgather.runtime.engine.robots_fetch.fetch_robots`),
archives and logs every robots request (``robots_entry``), keeps every host's
settled state on disk (:mod:`webgather.runtime.engine.robots_store`) and hands it back
to the gate when the gate has evicted the host, the crawl was resumed, or the host
came from another node with its rules (:mod:`webgather.runtime.engine.host_settled`), applies
Crawl-delay, enqueues ``Sitemap:`` URLs, and records the URLs the gate denies.

robots.txt is a request like any other, made in the slot of the host URL that
needed it: the node dispatched that URL under ``fetch.concurrency``, the host's
politeness clock and its address's ``per_ip_connections`` (the host's address
is learned before its first request, :meth:`RobotsDriver.admits`). The URL then
goes back to the head of its queue, unchanged, and the host waits its delay
before its first page. A redirect of robots.txt to another host waits for that
host's turn (:meth:`Politeness.take_turn`).

Retries need no timer: a host whose robots.txt failed is deferred in the
frontier until the gate's retry time; its next URL then comes up for dispatch,
and the gate answers "fetch robots first". The first failure of a host is logged
once (``logging.warning``); when the gate gives up the host's URLs get the
crawl-log error ``robots_unavailable`` with the last failure as ``detail``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from webgather.errors import Fenced, WebgatherError, WriteFailed
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.robots.compact import decode_state, encode_given_up, encode_rules
from webgather.robots.gate import Action, Allow, Dead, Deny, FetchRobots, RobotsGate, Wait, Waiting
from webgather.robots.parse import RobotsRules
from webgather.runtime.engine.parts import NodeParts
from webgather.runtime.engine.pipeline import make_items, robots_entry, unfetched_entry
from webgather.runtime.engine.robots_fetch import fetch_robots
from webgather.urls import canonicalize, fingerprint, host_key, hostname

if TYPE_CHECKING:
    from webgather.recrawl.hooks import FetchHooks

__all__ = ["RobotsDriver"]

log = logging.getLogger(__name__)

Route = Callable[[list[CrawlItem], float], list[CrawlItem]]


class RobotsDriver:
    """The node's robots.txt work: see the module docstring."""

    def __init__(self, parts: NodeParts, route: Route, wake: Callable[[], None], hooks: FetchHooks | None,
                 write_failed: Callable[[WriteFailed], None]) -> None:
        """``write_failed``: a robots.txt answer could not be stored (disk full): the node stops.
        A robots.txt request runs in the slot of the URL that needed it (:meth:`admits`), so it counts
        in the node's ``fetch.concurrency`` like a page."""
        self.parts = parts
        self._write_failed = write_failed
        self.gate: RobotsGate = parts.robots
        self.store = parts.robots_store
        self._route = route
        self._wake = wake
        self._hooks = hooks
        self.pending = 0
        """robots.txt fetches started and not yet applied (the node is not idle meanwhile)."""
        self.busy: set[str] = set()
        """Hosts whose robots.txt request is under way."""

    # -- from the node --------------------------------------------------------
    def adopt(self, hosts: Iterable[tuple[str, str, float]]) -> None:
        """``(host, sample url, wait_s)`` of handed-over hosts: their first URL comes up once ``wait_s``
        has passed, and robots.txt is fetched then unless fresh rules came with them (kept on disk)."""
        now = self.parts.clock.monotonic()
        for host, _sample_url, wait_s in hosts:
            held = self.gate.hold(host, now, now + min(wait_s, 3600.0))
            if held is not None:
                self.parts.frontier.defer_host(host, held.until)

    def forget(self, hosts: Iterable[str]) -> None:
        """These hosts moved to another node (their rows on disk stay: still true if they come back)."""
        for host in hosts:
            self.gate.forget(host)

    async def admits(self, item: CrawlItem) -> bool:
        """May ``item`` be fetched now? If not, it was recorded as denied or put back to wait;
        when its host's robots.txt was owed, it was fetched meanwhile, in this URL's slot."""
        host = host_key(item.url)
        if not await self._grouped(host):  # its address has no free slot: the URL waits for one
            self._put_back(item, host, None, requested=False)
            return False
        action = self._ask(host, item.url)
        requested = isinstance(action, FetchRobots)
        if isinstance(action, FetchRobots):
            try:
                action = await self._robots_for(host, item.url)
            except WriteFailed as exc:  # not the host's fault: the URL stays in flight for the resume
                self._write_failed(exc)
                return False
        if isinstance(action, Allow) and not requested:
            return True
        if isinstance(action, Deny):
            await self._record_denied(item, action, requested)
            return False
        # the host's deferral after a robots request was set when its answer was applied
        until = action.until if isinstance(action, Wait) and not requested else None
        self._put_back(item, host, until, requested)
        return False

    # -- asking the gate --------------------------------------------------------
    def _ask(self, host: str, url: str) -> Action:
        """The gate's answer; a host it does not hold is looked up on disk before robots.txt is asked for."""
        now = self.parts.clock.monotonic()
        action = self.gate.check(host, url, now)
        if isinstance(action, FetchRobots) and action.tries == 0:
            return self._recalled(host, url, now) or action
        return action

    def _recalled(self, host: str, url: str, now: float) -> Action | None:
        """The host's settled state kept on disk, given back to the gate, and the gate's answer;
        None if nothing fresh is kept (the host stays pending: its robots.txt is fetched)."""
        wall = self.parts.clock.wall()
        kept = self.store.get(host, wall)
        state = decode_state(kept[1], self.parts.config.fetch.user_agent) if kept is not None else None
        if kept is None or state is None:
            return None
        expires_at = now + (kept[0] - wall)
        if isinstance(state, RobotsRules):
            self.gate.learned(host, now, state, expires_at)
            self._set_delay(host, state)
        else:
            self.gate.give_up(host, now, state[0], state[1], until=expires_at)
        return self.gate.check(host, url, now)

    async def _grouped(self, host: str) -> bool:
        """Learn the host's address before its first request (hosts of one address share
        ``per_ip_connections``); False if the address turns out to have no free slot."""
        frontier = self.parts.frontier
        state = frontier.policy.known(host)
        if state is None or state.group != host:
            return True
        try:
            ip = await self.parts.resolver.resolve(hostname("http://" + host + "/"))
        except WebgatherError:  # a DNS failure shows up again, classified, in the robots fetch
            return True
        frontier.set_host_ip(host, ip)
        return not frontier.policy.over_ip_cap(host)

    def _put_back(self, item: CrawlItem, host: str, until: float | None, requested: bool) -> None:
        """The URL goes back to the head of its queue as it was (retry() counts an attempt, and no
        page request was made, so the count is undone first); the host waits until ``until``."""
        frontier, now = self.parts.frontier, self.parts.clock.monotonic()
        frontier.retry(replace(item, attempt=item.attempt - 1), now, not_before=now, error=False,
                       skipped=not requested)
        if until is not None:
            frontier.defer_host(host, until)

    # -- fetching robots.txt ----------------------------------------------------
    async def _robots_for(self, host: str, url: str) -> Allow | Deny | Wait:
        """Fetch the host's robots.txt, apply the answer; the gate's answer for ``url`` then."""
        origin = url[: url.index("//") + 2] + host
        self.pending += 1
        self.busy.add(host)
        try:
            waiting = await self._fetch_once(host, origin)
        except Fenced:  # not sent (runtime.member.fence): the host is being handed over
            self.gate.forget(host)
            raise
        except WriteFailed:
            raise
        except Exception as exc:  # worker top loop: a robots failure must not end the crawl
            now = self.parts.clock.monotonic()
            self._drop(host, self.gate.give_up(host, now, "robots_unavailable", f"{type(exc).__name__}: {exc}"))
            waiting = None
        finally:
            self.busy.discard(host)
            self.pending -= 1
            self._wake()
        if waiting is not None:
            return Wait(waiting.at)
        action = self.gate.check(host, url, self.parts.clock.monotonic())
        if isinstance(action, FetchRobots):  # settled and expired at once (a ttl_s below the clock's step)
            self.gate.forget(host)
            return Wait(self.parts.clock.monotonic())
        return action

    async def _fetch_once(self, host: str, origin: str) -> Waiting | None:
        """One robots.txt fetch with its redirects, applied; the retry ahead if it failed."""
        parts, hooks = self.parts, self._hooks
        known = hooks.cached_robots(host) if hooks is not None else None
        if known is not None:  # a re-crawl cycle reuses rules fetched within robots.ttl_s
            self._learned(host, known)
            return None
        outcome = await fetch_robots(origin, parts.http.fetch, parts.config.fetch.user_agent,
                                     parts.config.robots.max_bytes, before=self._turn, after=self._turn_ended)
        for result in outcome.results:
            parts.stats.robots_fetches += 1
            await parts.writer.write(result, robots_entry(result, parts.node_id), None)
        now = parts.clock.monotonic()
        if outcome.host_error:  # retrying DNS, or an address the guard refuses, for minutes helps nobody
            detail = "host does not resolve" if outcome.host_error == "dns" else "private address refused"
            self._drop(host, self.gate.give_up(host, now, outcome.host_error, detail))
            return None
        if outcome.rules is None:
            return self._failed(host, outcome.results[-1], now)
        if hooks is not None:
            hooks.robots_fetched(host, outcome.results[-1])
        self._learned(host, outcome.rules)
        return None

    async def _turn(self, url: str) -> None:
        """Wait for the politeness turn of ``url``'s host (booked now): every robots request,
        a redirect to another host included, keeps that host's distance."""
        now = self.parts.clock.monotonic()
        wait = self.parts.frontier.policy.take_turn(host_key(url), now) - now
        if wait > 0:
            await asyncio.sleep(wait)

    def _turn_ended(self, url: str) -> None:
        """A robots request ended: its host's next turn is one delay after that end, as after any
        request (booked at its start, a slow answer let the next hop come sooner than the delay)."""
        self.parts.frontier.policy.turn_ended(host_key(url), self.parts.clock.monotonic())

    def _learned(self, host: str, rules: RobotsRules) -> None:
        parts, now = self.parts, self.parts.clock.monotonic()
        self.gate.learned(host, now, rules)
        self.store.put(host, parts.clock.wall() + self.gate.ttl_s, encode_rules(rules))
        delay = self._set_delay(host, rules)
        parts.frontier.defer_host(host, now + max(delay, parts.config.politeness.min_delay_s))
        self._enqueue_sitemaps(rules.sitemaps)

    def _set_delay(self, host: str, rules: RobotsRules) -> float:
        delay = min(rules.crawl_delay_s or 0.0, self.parts.config.politeness.max_crawl_delay_s)
        if delay:
            self.parts.frontier.set_crawl_delay(host, delay)
        return delay

    def _failed(self, host: str, last: FetchResult, now: float) -> Waiting | None:
        why = last.error or f"HTTP {last.status}"
        state = self.gate.failed(host, now, why)
        tries = self.gate.tries_for(why)
        if (state.failures == 1) if isinstance(state, Waiting) else tries == 1:
            log.warning("robots.txt of %s unavailable (%s): its URLs wait; %d more tries, then they are dropped",
                        host, why, tries - 1)
        if isinstance(state, Dead):
            self._drop(host, state)
            return None
        self.parts.frontier.defer_host(host, max(state.at, now + self.parts.config.politeness.min_delay_s))
        return state

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
        clock = self.parts.clock
        now = clock.monotonic()
        self.store.put(host, clock.wall() + (dead.until - now), encode_given_up(dead.reason, dead.detail))
        self.parts.frontier.defer_host(host, now)
        log.info("gave up %s (%s: %s); its queued URLs are logged as denied", host, dead.reason, dead.detail)

    async def _record_denied(self, item: CrawlItem, deny: Deny, requested: bool) -> None:
        """``requested``: a robots.txt request was made in the URL's slot (the host's clock counts it)."""
        parts = self.parts
        await parts.writer.log(self._entry(item, deny.reason, deny.detail, parts.clock.wall()))
        self._count(item, deny.reason)
        parts.frontier.complete(item, parts.clock.monotonic(), response_time_s=None, skipped=not requested)

    def _entry(self, item: CrawlItem, error: str, detail: str, wall: float) -> dict[str, object]:
        entry = unfetched_entry(item, error, self.parts.node_id, wall)
        if detail:
            entry["detail"] = detail
        return entry

    def _count(self, item: CrawlItem, error: str) -> None:
        self.parts.stats.errors[error] += 1
        if self._hooks is not None:
            self._hooks.unfetched(item, error)
