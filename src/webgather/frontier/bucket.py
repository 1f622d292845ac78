"""What moves when a bucket changes owner: its queued items, seen keys and host clocks,
and what its hosts told the old owner (settled robots.txt state, cookies). Pure.

Clocks travel as *remaining waits* (``wait_s``) rather than absolute times,
because two nodes' monotonic clocks share no origin: the old owner writes
``next_allowed_at - now``, the new owner adds its own ``now``.

A host's settled state (:class:`HostSettled`) is not the frontier's: the node
fills ``BucketState.settled`` after ``Frontier.export_bucket`` and installs it
beside ``Frontier.import_bucket`` (``runtime.engine.host_settled``). Its robots
state's lifetime travels as seconds left at ``settled_wall`` (the old owner's
wall clock when it exported): a checkpoint restored minutes later counts those
minutes against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import KeyArray

__all__ = ["BucketState", "HostClock", "HostSettled"]


@dataclass(frozen=True, slots=True)
class HostClock:
    """The politeness state of one host, as handed over."""

    host: str
    wait_s: float = 0.0
    """Seconds until the host may be fetched again (0: now; ``math.inf``: held)."""
    crawl_delay_s: float = 0.0
    errors: int = 0
    """Consecutive errors (the next backoff continues from here)."""
    ip: str | None = None
    accepted: int = 0
    """Items ever queued for the host (for ``max_pages_per_host``)."""


@dataclass(frozen=True, slots=True)
class HostSettled:
    """What one host told the old owner that the new owner must not ask again."""

    host: str
    robots: bytes = b""
    """The host's settled robots state in its compact form (:mod:`webgather.robots.compact`); b"": none."""
    robots_ttl_s: float = 0.0
    """Seconds that state stays fresh, counted from the bucket's ``settled_wall``."""
    cookies: bytes = b""
    """The cookies a request to the host carries (:func:`webgather.fetch.cookies.encode_cookies`); b"": none."""


@dataclass(frozen=True, slots=True)
class BucketState:
    """One bucket's share of a frontier (``Frontier.export_bucket`` / ``import_bucket``).

    ``items`` are the queued items in queue order per host; items in flight at
    export time stay with the old owner (hand a bucket over once they are done).
    ``seen_keys`` are sorted and all inside the bucket's key range.
    """

    bucket: int
    n_buckets: int
    items: tuple[CrawlItem, ...] = ()
    seen_keys: KeyArray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    hosts: tuple[HostClock, ...] = ()
    settled: tuple[HostSettled, ...] = ()
    """Settled robots state and cookies of the bucket's hosts (empty from an older node)."""
    settled_wall: float = 0.0
    """Wall-clock time ``settled`` was taken (the robots TTLs count from it)."""
