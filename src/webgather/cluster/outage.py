"""How long a node's backend (Redis) or shared store has been unusable, and what the node says. Pure.

A node's loops (beat, lease, receive, router sends) all retry while the
backend is away: sends are retried with backoff and a page waits at its
barrier until its cross URLs are stored, so nothing discovered is lost and
the node pauses rather than crashes. :class:`Outage` is the one place that
turns the many failures of those loops into *two* log lines (one when the
service goes away, one when it is back) and decides when the wait has lasted
longer than ``max_outage_s``: the node then stops keeping its state (exit 6,
:class:`~webgather.errors.CannotContinue`), and the same command resumes the
crawl once the service is back.

An outage counts from the service's **last answer**, not from the first call
that failed: a black-holed link (connections accepted, nothing forwarded)
fails no call until its socket timeout, and a node must not wait that long to
notice or to start counting. :meth:`Outage.silent` begins an outage when
nothing answered for ``quiet_s`` although calls were made (the node's watch
loop asks every fraction of a second, whatever the hung calls do), so every
limit is enforced while the link is dead, not after it heals.

Time comes in as ``now`` (monotonic seconds); nothing here does IO.
"""

from __future__ import annotations

__all__ = ["Outage"]


class Outage:
    """The state of one node's connection to one service (``what``: "backend", "shared store")."""

    def __init__(self, node: str, max_outage_s: float, what: str = "backend", now: float = 0.0,
                 from_last_answer: bool = True) -> None:
        self.node = node
        self.from_last_answer = from_last_answer
        """Count an outage from the last answer (a backend asked several times a second), else from the
        first failure (a shared store, written once a checkpoint: a quiet store is not a broken one)."""
        self.max_outage_s = max_outage_s
        self.what = what
        self.last_ok = now
        """When the service last answered (or the node started)."""
        self.since: float | None = None
        """When the current outage began: the last answer before it (None: the service answers)."""
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
        self.since, self.reason = min(self.last_ok, now) if self.from_last_answer else now, reason
        self.outages += 1
        return (f"webgather node {self.node}: {self.what} unavailable ({reason}); pausing and retrying "
                f"for up to {self.max_outage_s:g} s")

    def silent(self, now: float, quiet_s: float) -> str | None:
        """Nothing answered for more than ``quiet_s`` (calls hang): begin an outage; its line, else None."""
        if self.since is not None or now - self.last_ok <= quiet_s:
            return None
        return self.failed(now, f"no answer for {now - self.last_ok:.1f} s")

    def succeeded(self, now: float) -> str | None:
        """Record a success; the line to log if it ends an outage, else None."""
        self.last_ok = max(self.last_ok, now)
        if self.since is None:
            return None
        lasted = max(0.0, now - self.since)
        self.since = None
        self.longest_s = max(self.longest_s, lasted)
        return f"webgather node {self.node}: {self.what} back after {lasted:.1f} s; resuming"

    def exceeded(self, now: float) -> bool:
        """True once the current outage has lasted longer than ``max_outage_s``."""
        return self.since is not None and now - self.since > self.max_outage_s

    def error_text(self) -> str:
        """The one-line error of a node that gave up waiting."""
        return (f"node {self.node}: {self.what} unavailable for more than {self.max_outage_s:g} s "
                f"({self.reason}); stopped keeping its state: run the same command again to resume")

    def as_dict(self) -> dict[str, float | int]:
        return {"outages": self.outages, "longest_s": round(self.longest_s, 3)}
