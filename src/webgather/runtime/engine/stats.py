"""Counters of a running node: typed, no global state.

The node owns one :class:`CrawlStats`; the progress display and the summary
read it. Pages per interval are kept for the load-balance figures (the
documents' Table 1 needs each node's pages per interval).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

from webgather.runtime.engine.host_tally import HostTally
from webgather.urls import host_key

__all__ = ["FETCH_SECONDS_BUCKETS", "PAGE_TIME_BUCKETS", "CrawlStats", "page_time_bucket", "page_time_upper_s"]

FETCH_SECONDS_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds (seconds) of the fetch latency histogram's buckets; a last one counts the rest
(Prometheus ``le`` buckets: each counts the attempts that took at most its bound)."""

PAGE_TIME_BASE_S = 0.1
PAGE_TIME_GROWTH = 1.005
PAGE_TIME_BUCKETS = 4096
"""When pages were completed, from the start, in buckets 0.5 % wide (plus 0.1 s): bounded memory for a crawl of any
length (the last bucket holds everything after ~1.3e8 s), the time to 99 % of pages within 0.5 % of the truth."""


def page_time_bucket(offset_s: float) -> int:
    """The bucket of a page completed ``offset_s`` seconds after the start."""
    if offset_s <= 0:
        return 0
    return min(PAGE_TIME_BUCKETS - 1, int(math.log1p(offset_s / PAGE_TIME_BASE_S) / math.log(PAGE_TIME_GROWTH)))


def page_time_upper_s(bucket: int) -> float:
    """The upper bound (seconds from the start) of ``bucket``."""
    return float(PAGE_TIME_BASE_S * (PAGE_TIME_GROWTH ** (bucket + 1) - 1))


@dataclass
class CrawlStats:
    started_at: float = 0.0
    """Wall clock at start."""
    interval_s: float = 10.0
    pages: int = 0
    """Final fetch attempts of pages and sitemaps (the crawl's fetched set)."""
    requisites: int = 0
    """Final fetch attempts of page requisites (images, stylesheets, scripts...): not pages, counted apart."""
    attempts: int = 0
    retries: int = 0
    robots_fetches: int = 0
    bytes_received: int = 0
    links_found: int = 0
    urls_new: int = 0
    status: Counter[int] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    per_interval: Counter[int] = field(default_factory=Counter)
    """Pages completed in interval k = floor((t - started_at) / interval_s)."""
    hosts: HostTally = field(default_factory=HostTally)
    """Pages per host of the busiest hosts (bounded: published with a cluster node's heartbeat)."""
    fetch_seconds_counts: list[int] = field(default_factory=lambda: [0] * (len(FETCH_SECONDS_BUCKETS) + 1))
    """Fetch attempts per latency bucket of :data:`FETCH_SECONDS_BUCKETS` (not cumulative; the last: slower)."""
    fetch_seconds_sum: float = 0.0
    """Seconds taken by all fetch attempts (the histogram's sum)."""
    page_times: array[int] = field(default_factory=lambda: array("I", bytes(4 * PAGE_TIME_BUCKETS)))
    """Pages completed per bucket of time since ``started_at`` (:func:`page_time_bucket`)."""
    last_page_s: float | None = None
    """Seconds from ``started_at`` to the last page completed (None: none yet)."""

    def record_attempt(self, elapsed_s: float) -> None:
        """A page fetch attempt (a retried one too) that took ``elapsed_s``: one bisect and two adds."""
        self.attempts += 1
        self.fetch_seconds_counts[bisect_left(FETCH_SECONDS_BUCKETS, elapsed_s)] += 1
        self.fetch_seconds_sum += elapsed_s

    def record_page(self, now_wall: float, status: int | None, error: str | None, size: int,
                    url: str | None = None, kind: str = "page") -> None:
        if kind.startswith("requisite"):  # not a page: its bytes count, nothing else
            self.requisites += 1
            self.bytes_received += size
            return
        self.pages += 1
        if url is not None:
            self.hosts.add(host_key(url))
        self.bytes_received += size
        if status is not None:
            self.status[status] += 1
        if error is not None:
            self.errors[error] += 1
        offset = now_wall - self.started_at
        self.per_interval[int(offset // self.interval_s)] += 1
        self.page_times[page_time_bucket(offset)] += 1
        if self.last_page_s is None or offset > self.last_page_s:
            self.last_page_s = offset

    def time_to_share_s(self, share: float) -> float | None:
        """Seconds from the start until ``share`` (0..1) of the pages were completed, rounded up to the
        end of its 0.5 % time bucket but never past the last page (None: no page yet)."""
        if not self.pages or self.last_page_s is None:
            return None
        need, seen = math.ceil(share * self.pages), 0
        for bucket, count in enumerate(self.page_times):
            seen += count
            if seen >= need:
                return min(page_time_upper_s(bucket), max(0.0, self.last_page_s))
        return max(0.0, self.last_page_s)

    def as_dict(self) -> dict[str, object]:
        return {
            "pages": self.pages,
            "requisites": self.requisites,
            "attempts": self.attempts,
            "retries": self.retries,
            "robots_fetches": self.robots_fetches,
            "bytes_received": self.bytes_received,
            "links_found": self.links_found,
            "urls_new": self.urls_new,
            "status": {str(k): v for k, v in sorted(self.status.items())},
            "errors": dict(sorted(self.errors.items())),
            "interval_s": self.interval_s,
            "pages_99_s": _rounded(self.time_to_share_s(0.99)),
            "last_page_s": _rounded(None if self.last_page_s is None else max(0.0, self.last_page_s)),
            "pages_per_interval": [self.per_interval.get(i, 0) for i in range(max(self.per_interval, default=-1) + 1)],
        }


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)
