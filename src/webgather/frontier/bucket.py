"""What moves when a bucket changes owner: its queued items, seen keys and host clocks. Pure.

Clocks travel as *remaining waits* (``wait_s``) rather than absolute times,
because two nodes' monotonic clocks share no origin: the old owner writes
``next_allowed_at - now``, the new owner adds its own ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import KeyArray

__all__ = ["BucketState", "HostClock"]


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
