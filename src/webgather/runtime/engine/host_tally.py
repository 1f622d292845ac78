"""The busiest hosts of a node in bounded memory: pages per host, Space-Saving (Metwally, Agrawal & El Abbadi 2005).

A node may crawl millions of hosts; its heartbeat publishes only the top few
(:func:`webgather.runtime.member.figures.node_info`), so it keeps at most
``capacity`` counters. A host not tracked when the table is full takes the
place of the smallest counter and inherits its count as an *overcount* bound:
a reported count is at most ``overcount`` above the truth, and every host with
more than ``pages / capacity`` pages is tracked. With at most ``capacity``
hosts the counts are exact (overcount 0). Pure; O(1) per page for a tracked
host, amortized O(1) in practice for one that displaces another (:meth:`HostTally._smallest`).
"""

from __future__ import annotations

import heapq

__all__ = ["HOST_TALLY_CAPACITY", "HostTally"]

HOST_TALLY_CAPACITY = 64


class HostTally:
    """Pages per host for the hosts that matter most (module docstring)."""

    def __init__(self, capacity: int = HOST_TALLY_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self._counts: dict[str, int] = {}
        self._overcount: dict[str, int] = {}
        self._low = 0
        self._lows: list[str] = []
        """Hosts that had the smallest count, ``_low``, at the last scan (see :meth:`_smallest`)."""

    def add(self, host: str, pages: int = 1) -> None:
        counts = self._counts
        if host in counts:
            counts[host] += pages
            return
        floor = 0
        if len(counts) >= self.capacity:
            victim = self._smallest()
            floor = counts.pop(victim)
            del self._overcount[victim]
        counts[host] = floor + pages
        self._overcount[host] = floor

    def _smallest(self) -> str:
        """A host with the smallest count. Counts only grow and a newcomer starts above the smallest,
        so the hosts found at the minimum by one scan stay candidates until they grow or leave:
        one O(capacity) scan serves every displacement until they are used up."""
        counts = self._counts
        while self._lows:
            host = self._lows.pop()
            if counts.get(host) == self._low:
                return host
        self._low = min(counts.values())
        self._lows = [host for host, n in counts.items() if n == self._low]
        return self._lows.pop()

    def top(self, k: int) -> list[tuple[str, int, int]]:
        """``(host, pages, overcount)`` of the ``k`` largest counts, largest first (ties by host name)."""
        best = heapq.nsmallest(k, self._counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(host, pages, self._overcount[host]) for host, pages in best]

    def __len__(self) -> int:
        return len(self._counts)
