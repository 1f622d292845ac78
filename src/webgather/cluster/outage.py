"""How long the backend has been unreachable, and what a node says about it. Pure.

A node's loops (beat, lease, receive, router sends) all retry while the
backend (Redis) is away: sends are retried with backoff and a page waits at
its barrier until its cross URLs are stored, so nothing discovered is lost and
the node pauses rather than crashes. :class:`Outage` is the one place that
turns the many failures of those loops into *two* log lines (one when the
backend goes away, one when it is back) and decides when the wait has lasted
longer than ``max_outage_s``: the node then stops keeping its state, and the
same command resumes the crawl once the backend is back.

Time comes in as ``now`` (monotonic seconds); nothing here does IO.
"""

from __future__ import annotations

__all__ = ["Outage"]


class Outage:
    """The state of one node's connection to its backend."""

    def __init__(self, node: str, max_outage_s: float) -> None:
        self.node = node
        self.max_outage_s = max_outage_s
        self.since: float | None = None
        """When the current outage began (None: the backend answers)."""
        self.reason = ""
        self.outages = 0
        """Outages seen so far (for the summary)."""
        self.longest_s = 0.0

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, now: float, reason: str) -> str | None:
        """Record a failure; the line to log if it begins an outage, else None."""
        if self.since is not None:
            return None
        self.since, self.reason = now, reason
        self.outages += 1
        return (f"webgather node {self.node}: backend unavailable ({reason}); pausing and retrying "
                f"for up to {self.max_outage_s:g} s")

    def succeeded(self, now: float) -> str | None:
        """Record a success; the line to log if it ends an outage, else None."""
        if self.since is None:
            return None
        lasted = max(0.0, now - self.since)
        self.since = None
        self.longest_s = max(self.longest_s, lasted)
        return f"webgather node {self.node}: backend back after {lasted:.1f} s; resuming"

    def exceeded(self, now: float) -> bool:
        """True once the current outage has lasted longer than ``max_outage_s``."""
        return self.since is not None and now - self.since > self.max_outage_s

    def error_text(self) -> str:
        """The one-line error of a node that gave up waiting."""
        return (f"node {self.node}: backend unavailable for more than {self.max_outage_s:g} s "
                f"({self.reason}); stopped keeping its state: run the same command again to resume")

    def as_dict(self) -> dict[str, float | int]:
        return {"outages": self.outages, "longest_s": round(self.longest_s, 3)}
