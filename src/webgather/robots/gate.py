"""The robots gate: every host's robots.txt state and the action each URL gets. Pure.

One :class:`RobotsGate` per node owns the robots state of every host the node
crawls; the runtime shell (``runtime.engine.robots_driver``) only carries out what it
answers. Time is passed in as ``now`` (monotonic seconds).

Per host the gate holds one of:

* *pending* - a robots.txt fetch is under way (the shell holds the host's URLs);
* *waiting* - nothing may be asked before ``at``: a retry after a failed fetch,
  or a host handed over by another node, whose politeness gap is not over yet;
* *known* - rules to obey until ``expires_at`` (``ttl_s`` after the fetch);
* *dead* - given up (``robots_unavailable`` after too many failed fetches,
  ``dns``): its URLs are denied with that reason until ``ttl_s`` has passed.

:meth:`RobotsGate.check` answers a URL about to be fetched with :class:`Allow`,
:class:`Deny` (reason ``robots`` or the dead host's), :class:`Wait` (until a
time, ``inf`` while a fetch is under way) or :class:`FetchRobots` (the host is
pending from now on: fetch robots.txt first, then ask again). Known rules that
expired get :class:`FetchRobots`: a missing entry never reads as "allow".

Failure schedule (:meth:`RobotsGate.failed`): a host that refuses the
connection (error ``connect``) is retried ``unreachable_retry_s`` later, then
twice that, and given up after ``unreachable_tries`` fetches in a row (1 s, 2 s,
3 tries by default: a dead host holds nothing for long; never longer nor more
tries than the other failures' schedule); any other failure
(5xx, 429, timeout, reset) waits ``error_retry_s`` x ``retry_factor``^(n-1)
and is given up after ``max_tries`` (5 s, 15 s, 45 s, 4 tries by default,
about a minute). A retry never comes sooner than the host's politeness gap.

Bounds: at most ``max_hosts`` settled entries (known and dead) are kept in
memory, the least recently asked-about evicted first. Eviction loses nothing:
the shell keeps every settled entry in the node's state on disk (a compact form,
:mod:`webgather.robots.compact`) and, when an evicted host is asked about again
(:class:`FetchRobots` with ``tries == 0``), hands it back with
:meth:`RobotsGate.learned` / :meth:`RobotsGate.give_up` and its original
expiry, so robots.txt is asked for again only once its ``ttl_s`` has passed.
Pending and waiting entries are never evicted (that would lose a failure
count); there are only as many as hosts with a robots fetch in flight or a
retry ahead, which the frontier bounds.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from webgather.errors import ConfigError
from webgather.robots.parse import ALLOW_ALL, RobotsRules

__all__ = ["Action", "Allow", "Dead", "Deny", "FetchRobots", "RobotsGate", "Wait", "Waiting"]


@dataclass(frozen=True, slots=True)
class Allow:
    rules: RobotsRules


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str
    """Crawl-log error: ``robots`` (disallowed), or why the host was given up."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Wait:
    until: float
    """Ask again at this time; ``math.inf`` while the host's robots.txt is being fetched."""


@dataclass(frozen=True, slots=True)
class FetchRobots:
    """Fetch the host's robots.txt now and report with ``learned``/``failed``/``give_up``."""

    tries: int
    """Fetches of this host's robots.txt that failed in a row before this one."""


Action = Allow | Deny | Wait | FetchRobots


@dataclass(frozen=True, slots=True)
class _Known:
    rules: RobotsRules
    expires_at: float


@dataclass(frozen=True, slots=True)
class _Pending:
    failures: int


@dataclass(frozen=True, slots=True)
class Waiting:
    """A host whose robots.txt may not be asked for before ``at``."""

    at: float
    failures: int
    reason: str = ""
    """The last failure's error kind ("" for a handed-over host)."""


@dataclass(frozen=True, slots=True)
class Dead:
    reason: str
    detail: str
    until: float


_Settled = _Known | Dead


UNREACHABLE = frozenset({"connect"})
"""Failure kinds of a host that is not there (refused, unreachable): the short schedule."""


class RobotsGate:
    """robots.txt state of every host one node crawls; see the module docstring."""

    def __init__(self, *, ttl_s: float = 86400.0, error_retry_s: float = 5.0, retry_factor: float = 3.0,
                 max_tries: int = 4, max_hosts: int = 10_000, obey: bool = True, min_gap_s: float = 0.0,
                 unreachable_retry_s: float = 1.0, unreachable_tries: int = 3) -> None:
        """``min_gap_s``: the host's politeness delay; a retry of its robots.txt never comes sooner."""
        if (max_tries < 1 or max_hosts < 1 or ttl_s <= 0 or error_retry_s < 0 or retry_factor < 1
                or unreachable_retry_s < 0 or unreachable_tries < 1):
            raise ConfigError(
                "RobotsGate needs max_tries, unreachable_tries, max_hosts >= 1, ttl_s > 0, error_retry_s >= 0, "
                f"unreachable_retry_s >= 0 and retry_factor >= 1; got {max_tries}, {unreachable_tries}, {max_hosts}, "
                f"{ttl_s}, {error_retry_s}, {unreachable_retry_s}, {retry_factor}")
        self.ttl_s = ttl_s
        self.error_retry_s = error_retry_s
        self.retry_factor = retry_factor
        self.max_tries = max_tries
        self.unreachable_retry_s = unreachable_retry_s
        self.unreachable_tries = unreachable_tries
        self.max_hosts = max_hosts
        self.obey = obey
        self.min_gap_s = min_gap_s
        self._settled: OrderedDict[str, _Settled] = OrderedDict()
        self._unsettled: dict[str, _Pending | Waiting] = {}

    def check(self, host: str, url: str, now: float) -> Action:
        """What to do with ``url`` of ``host``, about to be fetched at ``now``."""
        if not self.obey:
            return Allow(ALLOW_ALL)
        settled = self._live_settled(host, now)
        if isinstance(settled, _Known):
            return Allow(settled.rules) if settled.rules.allowed(url) else Deny("robots")
        if isinstance(settled, Dead):
            return Deny(settled.reason, settled.detail)
        unsettled = self._unsettled.get(host)
        if isinstance(unsettled, _Pending):
            return Wait(math.inf)
        if unsettled is not None and now < unsettled.at:
            return Wait(unsettled.at)
        return self._begin(host, unsettled.failures if unsettled is not None else 0)

    def peek(self, host: str, url: str, now: float) -> Allow | Deny | None:
        """:meth:`check` for a request the gate must not start anything for (a page's
        subresource in the browser): the answer of live rules, else None. Changes nothing."""
        if not self.obey:
            return Allow(ALLOW_ALL)
        settled = self._settled.get(host)
        if isinstance(settled, _Known) and now < settled.expires_at:
            return Allow(settled.rules) if settled.rules.allowed(url) else Deny("robots")
        if isinstance(settled, Dead) and now < settled.until:
            return Deny(settled.reason, settled.detail)
        return None

    def hold(self, host: str, now: float, until: float) -> Wait | None:
        """A handed-over host: ask for its robots.txt no sooner than ``until`` (the politeness gap
        after the previous owner's last request). None if nothing is owed (rules known, a fetch
        under way, ``until`` past, or ``robots.obey`` off)."""
        if not self.obey or until <= now or self._live_settled(host, now) is not None:
            return None
        unsettled = self._unsettled.get(host)
        if isinstance(unsettled, _Pending):
            return None
        failures = unsettled.failures if unsettled is not None else 0
        at = max(until, unsettled.at) if unsettled is not None else until
        self._unsettled[host] = Waiting(at, failures, unsettled.reason if unsettled is not None else "")
        return Wait(at)

    def learned(self, host: str, now: float, rules: RobotsRules, expires_at: float | None = None) -> None:
        """The host's robots.txt gave ``rules`` (ALLOW_ALL after a 4xx): obey them for ``ttl_s``
        (or until ``expires_at``: rules kept from an earlier fetch, handed back by the shell)."""
        self._unsettled.pop(host, None)
        self._settle(host, _Known(rules, now + self.ttl_s if expires_at is None else expires_at))

    def failed(self, host: str, now: float, reason: str) -> Waiting | Dead:
        """The fetch failed (``reason``: an error kind or ``HTTP 503``): retry later, or give up
        once too many fetches in a row failed (the schedule in the module docstring)."""
        previous = self._unsettled.pop(host, None)
        failures = (previous.failures if previous is not None else 0) + 1
        if failures >= self.tries_for(reason):
            return self.give_up(host, now, "robots_unavailable",
                                f"robots.txt failed {failures} times in a row, last: {reason}")
        self._settled.pop(host, None)
        waiting = self._unsettled[host] = Waiting(now + self.retry_wait_s(failures, reason), failures, reason)
        return waiting

    def give_up(self, host: str, now: float, reason: str, detail: str, until: float | None = None) -> Dead:
        """Deny every URL of ``host`` with ``reason`` for ``ttl_s`` (or until ``until``), then try afresh."""
        self._unsettled.pop(host, None)
        dead = Dead(reason, detail, now + self.ttl_s if until is None else until)
        self._settle(host, dead)
        return dead

    def forget(self, host: str) -> None:
        """Drop everything known about ``host`` (its bucket moved to another node)."""
        self._settled.pop(host, None)
        self._unsettled.pop(host, None)

    def tries_for(self, reason: str) -> int:
        """Fetches that may fail in a row, the last one failing with ``reason``, before the host is given up."""
        return min(self.unreachable_tries, self.max_tries) if reason in UNREACHABLE else self.max_tries

    def retry_wait_s(self, failures: int, reason: str = "") -> float:
        """Wait after the ``failures``-th failed fetch in a row (the schedule in the module
        docstring), never under ``min_gap_s`` (a retry is a request to the host like any other)."""
        wait = self.error_retry_s * self.retry_factor ** (failures - 1)
        if reason in UNREACHABLE:
            wait = min(wait, self.unreachable_retry_s * 2.0 ** (failures - 1))
        return max(wait, self.min_gap_s)

    def __len__(self) -> int:
        return len(self._settled) + len(self._unsettled)

    def counts(self, now: float) -> dict[str, int]:
        """Hosts by robots state at ``now``: ``allowed`` (rules known), ``dead`` (given up on),
        ``expired`` (either, past its time: fetched again on the host's next URL), ``fetching``
        (robots.txt under way) and ``waiting`` (to retry it later). Reads only; O(hosts)."""
        allowed = dead = expired = fetching = 0
        for state in self._settled.values():  # plain counters: a scrape holds the event loop while this runs
            if type(state) is _Known:
                if now < state.expires_at:
                    allowed += 1
                else:
                    expired += 1
            elif now < state.until:  # type: ignore[union-attr]
                dead += 1
            else:
                expired += 1
        for unsettled in self._unsettled.values():
            if type(unsettled) is _Pending:
                fetching += 1
        return {"allowed": allowed, "dead": dead, "expired": expired, "fetching": fetching,
                "waiting": len(self._unsettled) - fetching}

    def _live_settled(self, host: str, now: float) -> _Settled | None:
        settled = self._settled.get(host)
        if settled is None:
            return None
        deadline = settled.expires_at if isinstance(settled, _Known) else settled.until
        if now >= deadline:
            del self._settled[host]  # expired: the host needs a fresh fetch, never "allow"
            return None
        self._settled.move_to_end(host)
        return settled

    def _begin(self, host: str, failures: int) -> FetchRobots:
        self._settled.pop(host, None)
        self._unsettled[host] = _Pending(failures)
        return FetchRobots(failures)

    def _settle(self, host: str, state: _Settled) -> None:
        settled = self._settled
        settled[host] = state
        settled.move_to_end(host)
        while len(settled) > self.max_hosts:
            settled.popitem(last=False)  # an evicted host gets FetchRobots on its next URL
