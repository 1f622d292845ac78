"""Per-host robots.txt state: a pure state machine driven by the fetch shell.

The shell (``runtime.robots``) asks :meth:`RobotsCache.state` before a host's
pages are fetched and acts on the answer:

* :class:`Known` - obey ``state.rules`` (also :data:`~webgather.robots.parse.ALLOW_ALL`
  after a 4xx);
* :class:`NeedFetch` - call :meth:`~RobotsCache.begin_fetch`, request
  ``/robots.txt`` (following up to 5 redirects itself: redirects are IO and
  are not modelled here) and report with :meth:`~RobotsCache.record`;
* :class:`Pending` - a fetch is under way: keep the host's URLs waiting;
* :class:`Backoff` - the last fetch failed (5xx, 429, timeout, unreachable):
  the host is disallowed for now; keep its URLs waiting until ``retry_at``,
  then the state is :class:`NeedFetch` again;
* :class:`GaveUp` - ``max_failures`` fetches in a row failed: drop the host's
  URLs (crawl-log error ``robots_unavailable``).

``record(host, now, rules)`` takes the rules the answer gave, or None for
"unavailable" (:func:`webgather.robots.parse.rules_for_response` maps an HTTP
status to that). Known rules expire ``ttl_s`` after they were recorded; a
GaveUp host is tried afresh after ``ttl_s`` too. A Pending fetch that was never
recorded counts as lost after ``max_pending_s`` (the state is NeedFetch again).

Bounds: at most ``max_hosts`` settled entries (Known and GaveUp) are kept, the
least recently asked-about evicted first (an evicted host simply needs a new
fetch). Pending and Backoff entries are never evicted, as that would lose the
failure count; there are only as many as hosts with a robots fetch in flight or
waiting to retry, which the frontier bounds.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from webgather.errors import ConfigError
from webgather.robots.parse import RobotsRules

__all__ = [
    "Backoff",
    "GaveUp",
    "Known",
    "NeedFetch",
    "Pending",
    "RobotsCache",
    "RobotsState",
]


@dataclass(frozen=True, slots=True)
class Known:
    rules: RobotsRules
    expires_at: float


@dataclass(frozen=True, slots=True)
class NeedFetch:
    failures: int = 0
    """Failed fetches in a row so far (0: first attempt or after a success)."""


@dataclass(frozen=True, slots=True)
class Pending:
    since: float
    failures: int = 0


@dataclass(frozen=True, slots=True)
class Backoff:
    retry_at: float
    failures: int


@dataclass(frozen=True, slots=True)
class GaveUp:
    failures: int
    until: float
    """After this the host is tried afresh (NeedFetch with no failures)."""


RobotsState = Known | NeedFetch | Pending | Backoff | GaveUp
_Settled = Known | GaveUp
_Unsettled = NeedFetch | Pending | Backoff


class RobotsCache:
    """robots.txt state of every host one node crawls. No IO; time is passed in as ``now``."""

    def __init__(
        self,
        ttl_s: float = 86400.0,
        error_retry_s: float = 600.0,
        max_failures: int = 3,
        max_hosts: int = 10_000,
        max_pending_s: float = 300.0,
    ) -> None:
        if min(max_failures, max_hosts) < 1 or min(ttl_s, error_retry_s, max_pending_s) < 0:
            raise ConfigError(
                "RobotsCache needs max_failures, max_hosts >= 1 and ttl_s, error_retry_s, "
                f"max_pending_s >= 0; got {max_failures}, {max_hosts}, {ttl_s}, "
                f"{error_retry_s}, {max_pending_s}"
            )
        self.ttl_s = ttl_s
        self.error_retry_s = error_retry_s
        self.max_failures = max_failures
        self.max_hosts = max_hosts
        self.max_pending_s = max_pending_s
        self._settled: OrderedDict[str, _Settled] = OrderedDict()
        self._unsettled: dict[str, _Unsettled] = {}

    def state(self, host: str, now: float) -> RobotsState:
        """What to do about ``host`` at ``now`` (see the module docstring)."""
        settled = self._settled.get(host)
        if settled is not None:
            deadline = settled.expires_at if isinstance(settled, Known) else settled.until
            if now < deadline:
                self._settled.move_to_end(host)
                return settled
            del self._settled[host]
            return NeedFetch()
        unsettled = self._unsettled.get(host)
        if isinstance(unsettled, Pending) and now - unsettled.since >= self.max_pending_s:
            unsettled = self._unsettled[host] = NeedFetch(unsettled.failures)
        elif isinstance(unsettled, Backoff) and now >= unsettled.retry_at:
            unsettled = self._unsettled[host] = NeedFetch(unsettled.failures)
        return unsettled if unsettled is not None else NeedFetch()

    def begin_fetch(self, host: str, now: float) -> Pending:
        """A robots.txt request for ``host`` starts now (from any state: a forced refresh)."""
        self._settled.pop(host, None)
        previous = self._unsettled.get(host)
        failures = previous.failures if previous is not None else 0
        pending = self._unsettled[host] = Pending(now, failures)
        return pending

    def record(self, host: str, now: float, rules: RobotsRules | None) -> RobotsState:
        """The fetch for ``host`` ended: ``rules`` to obey, or None if robots.txt was unavailable."""
        previous = self._unsettled.pop(host, None)
        if rules is not None:
            return self._settle(host, Known(rules, now + self.ttl_s))
        failures = (previous.failures if previous is not None else 0) + 1
        if failures >= self.max_failures:
            return self._settle(host, GaveUp(failures, now + self.ttl_s))
        self._settled.pop(host, None)
        backoff = self._unsettled[host] = Backoff(now + self.error_retry_s, failures)
        return backoff

    def forget(self, host: str) -> None:
        """Drop everything known about ``host`` (e.g. when its bucket moves to another node)."""
        self._settled.pop(host, None)
        self._unsettled.pop(host, None)

    def __len__(self) -> int:
        return len(self._settled) + len(self._unsettled)

    def _settle(self, host: str, state: _Settled) -> _Settled:
        settled = self._settled
        settled[host] = state
        settled.move_to_end(host)
        while len(settled) > self.max_hosts:
            settled.popitem(last=False)
        return state
