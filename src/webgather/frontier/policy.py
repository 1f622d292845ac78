"""Politeness and priority among hosts: when may which host be fetched next. Pure.

Inputs are values and ``now`` (seconds on the caller's monotonic clock); this
module never reads a clock and never sleeps. :meth:`Politeness.next_ready`
returns a host that may be fetched now, or ``None`` and the time to wake.

Per host (:class:`HostState`): the time it may next be fetched, its requests in
flight, its delay, its consecutive errors. The delay after a request is::

    delay = max(min_delay_s,
                min(robots Crawl-delay, max_crawl_delay_s),
                min(adaptive_delay_factor x response time, max_delay_s))

counted from the END of the request (:meth:`Politeness.complete`), so the gap a
server sees between two requests from us is at least ``delay``.

Back-off follows the health of the HOST, not the count of failing attempts:
``errors`` counts the different URLs that failed in a row on the host (a
failed retry of a URL holds the count, or starts it at 1; it does not add),
and any success resets it to 0. After a failure the host waits::

    max(delay, step)    step = min(Retry-After, retry_after_max_s)     if the server sent one
                        step = min(backoff_base_s * 2**(errors-1), backoff_max_s)   otherwise

A server-sent Retry-After replaces the exponential step (the server said when
it wants us back: ``Retry-After: 1`` means about 1 s, not 2, 4, 8...). The
failing URL itself waits for its retry on its own clock (its attempt count;
see ``Frontier.retry``) without holding the host's queue, and is due only after
the host's next request (:mod:`webgather.frontier.parked`), so one URL that
keeps answering 500 costs the host's other URLs at most one bounded step per
failure, and their successes reset the streak. (Counting each attempt instead,
two broken URLs of a healthy site, retried in turn, made five failures in a
row and stalled the site for 8 then 32 s; a site whose every URL fails still
climbs the steps, one new URL at a time.) (Heritrix snoozes a host by a
fixed politeness delay and schedules a URL's retry separately; Nutch and
Scrapy's AutoThrottle likewise back a host off only while it keeps failing.)
Up to ``per_host_connections`` requests to a host may be in flight, and up to
``per_ip_connections`` to all hosts of one IP address (:meth:`set_host_ip`; a
host whose address is unknown is its own group).

Two heaps hold the hosts that have something queued: *waiting*, keyed by the
time the host may next be fetched, and *ready*, keyed by the priority of the
host's queue head (its depth when breadth-first, so among ready hosts the
shallowest head goes first; FIFO among equals). A host ready but held back by
its IP's cap waits in a per-IP list and is released by a completion on that IP.
Heap entries carry a stamp; a changed host gets a new stamp and stale entries
are skipped, so every update is O(log hosts).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from webgather.config import PolitenessConfig

__all__ = ["HostState", "Politeness"]

_IDLE, _WAITING, _READY, _BLOCKED = 0, 1, 2, 3


@dataclass(slots=True)
class HostState:
    """Politeness clock and counters of one host."""

    host: str
    group: str
    """The host's IP address, or the host itself while the address is unknown."""
    next_allowed_at: float = 0.0
    active: int = 0
    crawl_delay_s: float = 0.0
    """robots.txt Crawl-delay as given (capped when used)."""
    last_response_s: float = 0.0
    errors: int = 0
    """Different URLs failed in a row (reset by a success; see the module docstring)."""
    head: float | None = None
    """Priority of the host's queue head; None while nothing is queued."""
    stamp: int = 0
    where: int = _IDLE


class Politeness:
    """Per-host and per-IP politeness with a ready-heap (see the module docstring)."""

    def __init__(self, config: PolitenessConfig) -> None:
        self.config = config
        self._hosts: dict[str, HostState] = {}
        self._waiting: list[tuple[float, int, str]] = []
        self._ready: list[tuple[float, int, int, str]] = []
        self._ip_active: dict[str, int] = {}
        self._ip_blocked: dict[str, list[tuple[float, int, int, str]]] = {}
        self._ip_of: dict[str, str] = {}
        self._tiebreak = 0

    # -- queries -------------------------------------------------------------

    def state(self, host: str) -> HostState:
        """The host's state, created on first use."""
        st = self._hosts.get(host)
        if st is None:
            st = HostState(host, self._ip_of.get(host, host))
            self._hosts[host] = st
        return st

    def known(self, host: str) -> HostState | None:
        return self._hosts.get(host)

    def hosts(self) -> list[HostState]:
        return list(self._hosts.values())

    def counts(self, now: float) -> dict[str, int]:
        """Hosts total, with a request under way (active), and among those with something queued:
        ready, waiting, backed off."""
        ready = waiting = backed_off = active = 0
        for st in self._hosts.values():
            if st.active:
                active += 1
            if st.head is None:
                continue
            if st.errors:
                backed_off += 1
            if st.next_allowed_at <= now and st.active < self.config.per_host_connections:
                ready += 1
            else:
                waiting += 1
        return {"hosts_total": len(self._hosts), "hosts_ready": ready,
                "hosts_waiting": waiting, "hosts_backed_off": backed_off, "hosts_active": active}

    def delay_s(self, st: HostState, response_time_s: float | None) -> float:
        """The gap after a successful request to the host (before error backoff)."""
        cfg = self.config
        delay = max(cfg.min_delay_s, min(st.crawl_delay_s, cfg.max_crawl_delay_s))
        if cfg.adaptive_delay_factor > 0 and response_time_s is not None:
            delay = max(delay, min(cfg.adaptive_delay_factor * response_time_s, cfg.max_delay_s))
        return delay

    def turn_after_next(self, host: str) -> float:
        """When the host may go again after one more request started as soon as it may
        (and taking no time): its next allowed time plus its delay."""
        st = self.state(host)
        return st.next_allowed_at + self.delay_s(st, None)

    def take_turn(self, host: str, now: float) -> float:
        """Book the host's next turn for a request made outside the queues (a robots.txt
        redirect to this host): returns when it may go, ``now`` at the earliest, and moves the
        host's next allowed time one delay past it, so the host's own URLs (and the next
        booking) keep their distance. A host deferred without end counts as free now."""
        st = self.state(host)
        at = max(now, st.next_allowed_at) if math.isfinite(st.next_allowed_at) else now
        st.next_allowed_at = at + self.delay_s(st, None)
        self._schedule(st, now)
        return at

    def turn_ended(self, host: str, now: float) -> None:
        """The request of a turn booked with :meth:`take_turn` ended at ``now``: the host's next
        turn is one delay after that end at the earliest, as after a request from its queue
        (:meth:`complete`). A host deferred without end stays deferred."""
        st = self.state(host)
        if math.isfinite(st.next_allowed_at):
            st.next_allowed_at = max(st.next_allowed_at, now + self.delay_s(st, None))
            self._schedule(st, now)

    def over_ip_cap(self, host: str) -> bool:
        """Has the host's address group more requests in flight than ``per_ip_connections``?
        (It can once a host in flight learns its address: :meth:`set_host_ip`.)"""
        st = self._hosts.get(host)
        return st is not None and self._ip_active.get(st.group, 0) > self.config.per_ip_connections

    def backoff_s(self, errors: int) -> float:
        """Backoff after ``errors`` consecutive errors: base * 2**(errors-1), capped."""
        if errors <= 0:
            return 0.0
        cfg = self.config
        exponent = min(errors - 1, 62)
        return float(min(cfg.backoff_base_s * 2.0**exponent, cfg.backoff_max_s))

    # -- the scheduler ---------------------------------------------------------

    def next_ready(self, now: float) -> tuple[str | None, float]:
        """A host that may be fetched now, marked as started (active + 1), and ``now``;
        or ``None`` and the earliest time a host becomes ready by time alone
        (``math.inf`` if none will: nothing queued, or all held by requests in
        flight). :meth:`set_head` and :meth:`complete` can make a host ready
        sooner, so call again after those."""
        self._promote(now)
        ready = self._ready
        per_ip = self.config.per_ip_connections
        while ready:
            entry = heapq.heappop(ready)
            host = entry[3]
            st = self._hosts.get(host)
            if st is None or st.stamp != entry[2]:
                continue
            if self._ip_active.get(st.group, 0) >= per_ip:
                st.where = _BLOCKED
                heapq.heappush(self._ip_blocked.setdefault(st.group, []), entry)
                continue
            self._start(st)
            return host, now
        return None, self._wake_at()

    def set_head(self, host: str, head: float | None, now: float) -> None:
        """The host's queue head changed: its priority, or None when the queue is empty."""
        st = self.state(host)
        if st.head == head and st.where != _IDLE:
            return
        st.head = head
        self._schedule(st, now)

    def complete(self, host: str, now: float, response_time_s: float | None = None,
                 error: bool = False, retry_after_s: float | None = None,
                 not_before: float | None = None, skipped: bool = False, again: bool = False) -> None:
        """A request to ``host`` ended at ``now``: free its slots and set when it may go again.

        ``skipped``: no request was made after all (robots disallowed it); the
        slot is freed and the host's clock left as it was. ``again``: the request
        was a retry of a URL that failed before (its failure does not lengthen
        the host's error streak; see the module docstring).
        """
        st = self.state(host)
        if st.active <= 0:
            raise ValueError(f"complete() for {host!r} with no request in flight")
        self._release(st)
        if not skipped:
            until = self._until(st, now, response_time_s, error, retry_after_s, again)
            st.next_allowed_at = max(st.next_allowed_at, until)
        if not_before is not None:
            st.next_allowed_at = max(st.next_allowed_at, not_before)
        self._schedule(st, now)
        self._unblock(st.group, now)

    def _until(self, st: HostState, now: float, response_time_s: float | None,
               error: bool, retry_after_s: float | None, again: bool) -> float:
        if response_time_s is not None:
            st.last_response_s = response_time_s
        if not error:
            st.errors = 0
        else:  # a URL failing again tells nothing new about the host: it holds the streak
            st.errors = max(st.errors, 1) if again else st.errors + 1
        return now + max(self.delay_s(st, response_time_s), self.step_s(st.errors, retry_after_s))

    def step_s(self, errors: int, retry_after_s: float | None) -> float:
        """The host's back-off step: the server's Retry-After (clamped to
        ``retry_after_max_s``) when it sent one, else :meth:`backoff_s` of ``errors``."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.config.retry_after_max_s)
        return self.backoff_s(errors)

    def defer(self, host: str, until: float, now: float) -> None:
        """Fetch nothing from ``host`` before ``until``: sets its next allowed time
        (replacing a deferral or delay already set, so ``math.inf`` then a real
        time holds a host and releases it)."""
        st = self.state(host)
        st.next_allowed_at = until
        self._schedule(st, now)

    def set_crawl_delay(self, host: str, seconds: float) -> None:
        """robots.txt Crawl-delay of the host (applies from its next completion)."""
        if not seconds >= 0 or math.isnan(seconds):
            raise ValueError(f"crawl delay must be >= 0, got {seconds!r}")
        self.state(host).crawl_delay_s = seconds

    def set_host_ip(self, host: str, ip: str, now: float) -> None:
        """Group ``host`` with the other hosts on address ``ip`` for the per-IP cap."""
        self._ip_of[host] = ip
        st = self._hosts.get(host)
        if st is None or st.group == ip:
            return
        old = st.group
        if st.active:
            self._ip_active[old] -= st.active
            self._ip_active[ip] = self._ip_active.get(ip, 0) + st.active
        st.group = ip
        self._schedule(st, now)
        self._unblock(old, now)

    def forget(self, host: str) -> HostState | None:
        """Remove the host's state (only when nothing is in flight); returns it."""
        st = self._hosts.get(host)
        if st is None or st.active:
            return None
        st.stamp += 1
        self._ip_of.pop(host, None)
        return self._hosts.pop(host)

    # -- internals ----------------------------------------------------------------

    def _start(self, st: HostState) -> None:
        st.active += 1
        self._ip_active[st.group] = self._ip_active.get(st.group, 0) + 1
        st.stamp += 1
        st.where = _IDLE

    def _release(self, st: HostState) -> None:
        st.active -= 1
        left = self._ip_active[st.group] - 1
        if left:
            self._ip_active[st.group] = left
        else:
            del self._ip_active[st.group]

    def _schedule(self, st: HostState, now: float) -> None:
        st.stamp += 1
        if st.head is None or st.active >= self.config.per_host_connections:
            st.where = _IDLE
        elif now < st.next_allowed_at:
            st.where = _WAITING
            heapq.heappush(self._waiting, (st.next_allowed_at, st.stamp, st.host))
            if len(self._waiting) > 4 * len(self._hosts) + 1024:
                self._compact_waiting()
        else:
            self._push_ready(st)

    def _compact_waiting(self) -> None:
        """Drop stale entries (a host deferred to infinity and released leaves one forever)."""
        hosts = self._hosts
        self._waiting = [e for e in self._waiting if (st := hosts.get(e[2])) is not None and st.stamp == e[1]]
        heapq.heapify(self._waiting)

    def _push_ready(self, st: HostState) -> None:
        st.where = _READY
        self._tiebreak += 1
        assert st.head is not None
        heapq.heappush(self._ready, (st.head, self._tiebreak, st.stamp, st.host))

    def _promote(self, now: float) -> None:
        waiting = self._waiting
        hosts = self._hosts
        while waiting and waiting[0][0] <= now:
            _, stamp, host = heapq.heappop(waiting)
            st = hosts.get(host)
            if st is not None and st.stamp == stamp:
                self._push_ready(st)

    def _wake_at(self) -> float:
        waiting = self._waiting
        hosts = self._hosts
        while waiting:
            at, stamp, host = waiting[0]
            st = hosts.get(host)
            if st is not None and st.stamp == stamp:
                return at
            heapq.heappop(waiting)
        return math.inf

    def _unblock(self, group: str, now: float) -> None:
        """Move blocked hosts of ``group`` back to ready, as many as the group has free slots."""
        blocked = self._ip_blocked.get(group)
        free = self.config.per_ip_connections - self._ip_active.get(group, 0)
        while blocked and free > 0:
            entry = heapq.heappop(blocked)
            st = self._hosts.get(entry[3])
            if st is not None and st.stamp == entry[2] and st.where == _BLOCKED:
                st.where = _READY  # keeps its place in line: a blocked host was ready first
                heapq.heappush(self._ready, entry)
                free -= 1
        if blocked is not None and not blocked:
            del self._ip_blocked[group]
