"""What the server saw: one record per request, and politeness checks over them. Pure.

Tests prove politeness from these records: at most N requests in flight per
host or per address (:func:`max_in_flight`), at least D seconds between the
end of one request to a host and the start of the next (:func:`min_gaps`),
no request for a disallowed URL (filter on ``path``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import NamedTuple

__all__ = ["RequestRecord", "max_in_flight", "min_gaps", "per_key"]


class RequestRecord(NamedTuple):
    start_s: float
    """Monotonic seconds when the request head was complete."""
    end_s: float
    """Monotonic seconds just before the response was handed to the socket (or the connection dropped):
    the client cannot have had it earlier."""
    host: str
    """Host header as sent (``host:port``), lower-cased."""
    path: str
    """Request target (path and query)."""
    peer: str
    """Client IP address."""
    local: str
    """Server address the connection came in on."""
    conn_id: int
    """Server-side connection number (keep-alive requests share one)."""
    status: int | None
    """Status sent; None when the connection was reset without a response."""
    bytes_sent: int


def per_key(records: Iterable[RequestRecord], key: Callable[[RequestRecord], str]) -> dict[str, list[RequestRecord]]:
    """Records grouped by ``key`` (e.g. ``lambda r: r.host`` or ``lambda r: r.local``), by start time."""
    groups: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in records:
        groups[key(record)].append(record)
    for group in groups.values():
        group.sort(key=lambda r: r.start_s)
    return dict(groups)


def max_in_flight(records: Iterable[RequestRecord], key: Callable[[RequestRecord], str]) -> dict[str, int]:
    """Most requests open at once per key (intervals [start, end]; touching ends do not overlap)."""
    result: dict[str, int] = {}
    for name, group in per_key(records, key).items():
        events = sorted([(r.start_s, 1) for r in group] + [(r.end_s, -1) for r in group], key=lambda e: (e[0], e[1]))
        open_now = peak = 0
        for _, change in events:
            open_now += change
            peak = max(peak, open_now)
        result[name] = peak
    return result


def min_gaps(records: Iterable[RequestRecord], key: Callable[[RequestRecord], str]) -> dict[str, float]:
    """Smallest (start of a request - end of the previous one) per key; keys with one request are absent."""
    result: dict[str, float] = {}
    for name, group in per_key(records, key).items():
        gaps = [b.start_s - a.end_s for a, b in zip(group, group[1:])]
        if gaps:
            result[name] = min(gaps)
    return result
