"""Per-host queues of CrawlItems: one small protocol, a memory and a persistent backend.

Each host's queue is ordered by ``(key, seq)``: the key is the item's depth
(breadth-first) or its ``priority`` (``order="opic"``), and ``seq`` a counter
that makes equal keys first-in first-out. An item taken by :meth:`pop` is *in
flight* until :meth:`finish` either drops it (done) or puts it back at its old
place with ``attempt + 1`` (retry). Items are identified by their fingerprint:
the seen-test guarantees one item per fingerprint. Under OPIC (``live`` given)
:meth:`reprioritize` moves a queued item to a lower key
(:mod:`webgather.frontier.live`).

:class:`MemoryQueues` keeps everything in RAM (a heap per host). The persistent
backend, :class:`webgather.frontier.queues_sqlite.SqliteQueues`, keeps every
queued item in SQLite and only a bounded head of each host in RAM.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from webgather.errors import FrontierError
from webgather.frontier.live import LiveEntries
from webgather.frontier.model import CrawlItem

__all__ = ["HostQueues", "MemoryQueues", "QueueEntry"]

QueueEntry = tuple[float, int, CrawlItem]
"""``(key, seq, item)``: heap order is the queue order."""


class HostQueues(Protocol):
    """Queues of items per host (contract: ``tests/contract/test_queue_contract.py``).

    * ``push(host, items)`` appends in order; returns the head key of the host.
    * ``pop(host)`` takes the head item (now in flight) and returns it with the
      new head key (None when the host has nothing left queued); raises
      :class:`~webgather.errors.FrontierError` if the host has nothing queued.
    * ``finish(host, item, retry)``: the in-flight item is done (``retry`` False)
      or goes back to its place with ``attempt + 1`` (returned); returns the head key too.
    * ``remove_host(host)`` removes and returns the host's queued items (not
      those in flight), in queue order.
    * ``items(host, limit)`` lists queued items in order without removing them.
    * ``commit()`` makes every change so far durable (a no-op in memory).
    * ``reprioritize(host, fp, key)``: the queued item ``fp`` gets the lower key
      ``key`` (OPIC; at once if held in memory, else when it is read back);
      returns the head key.
    """

    def push(self, host: str, items: Sequence[CrawlItem]) -> float | None: ...

    def pop(self, host: str) -> tuple[CrawlItem, float | None]: ...

    def finish(self, host: str, item: CrawlItem, retry: bool) -> tuple[CrawlItem | None, float | None]: ...

    def remove_host(self, host: str) -> list[CrawlItem]: ...

    def items(self, host: str, limit: int | None = None) -> list[CrawlItem]: ...

    def commit(self) -> None: ...

    def reprioritize(self, host: str, fp: int, key: float) -> float | None: ...


@dataclass(slots=True)
class _Taken:
    host: str
    key: float
    seq: int


@dataclass(slots=True)
class MemoryQueues:
    """All queues in RAM: a heap of ``(key, seq, item)`` per host."""

    by_depth: bool = True
    live: LiveEntries | None = None
    """OPIC: the current entry of each item (re-keyed items leave stale entries behind)."""
    _heaps: dict[str, list[QueueEntry]] = field(default_factory=dict)
    _taken: dict[int, _Taken] = field(default_factory=dict)
    _seq: int = 0

    def __post_init__(self) -> None:
        if not self.by_depth and self.live is None:
            self.live = LiveEntries()

    def push(self, host: str, items: Sequence[CrawlItem]) -> float | None:
        heap = self._heaps.get(host)
        if heap is None:
            heap = self._heaps[host] = []
        seq = self._seq
        by_depth = self.by_depth
        push = heapq.heappush if self.live is None else self.live.push
        for item in items:
            seq += 1
            push(heap, (float(item.depth) if by_depth else item.priority, seq, item))
        self._seq = seq
        return heap[0][0] if heap else None

    def pop(self, host: str) -> tuple[CrawlItem, float | None]:
        heap = self._heaps.get(host)
        live = self.live
        if not heap:
            raise FrontierError(f"pop() from host {host!r} with nothing queued")
        key, seq, item = heapq.heappop(heap) if live is None else live.pop(heap)
        if item.fp in self._taken:
            (heapq.heappush if live is None else live.push)(heap, (key, seq, item))
            raise FrontierError(f"item {item.url!r} is already in flight")
        self._taken[item.fp] = _Taken(host, key, seq)
        if live is not None:
            live.clean(heap)
        if not heap:
            del self._heaps[host]
            return item, None
        return item, heap[0][0]

    def finish(self, host: str, item: CrawlItem, retry: bool) -> tuple[CrawlItem | None, float | None]:
        taken = self._taken.get(item.fp)
        if taken is None or taken.host != host:
            raise FrontierError(f"finish() of {item.url!r}, which is not in flight")
        del self._taken[item.fp]
        again = None
        if retry:
            again = replace(item, attempt=item.attempt + 1)
            heap = self._heaps.setdefault(host, [])
            (heapq.heappush if self.live is None else self.live.push)(heap, (taken.key, taken.seq, again))
        heap_now = self._heaps.get(host)
        return again, (heap_now[0][0] if heap_now else None)

    def remove_host(self, host: str) -> list[CrawlItem]:
        heap = self._heaps.pop(host, [])
        if self.live is not None:
            self.live.keep_live(heap)
            self.live.forget(heap)
        heap.sort()
        return [entry[2] for entry in heap]

    def items(self, host: str, limit: int | None = None) -> list[CrawlItem]:
        heap = self._heaps.get(host, [])
        if self.live is not None:
            self.live.keep_live(heap)
        ordered = sorted(heap) if limit is None else heapq.nsmallest(limit, heap)
        return [entry[2] for entry in ordered]

    def commit(self) -> None:
        """Nothing to do: memory queues are never durable."""

    def reprioritize(self, host: str, fp: int, key: float) -> float | None:
        heap = self._heaps.get(host)
        if heap is None or self.live is None:
            return heap[0][0] if heap else None
        if self.live.rekey(heap, fp, key):
            self.live.clean(heap)
        return heap[0][0]

    def close(self) -> None:
        self._heaps.clear()
        self._taken.clear()

    def queued(self, host: str) -> int:
        heap = self._heaps.get(host, [])
        return len(heap) if self.live is None else sum(map(self.live.is_live, heap))

    def hosts(self) -> list[str]:
        return list(self._heaps)
