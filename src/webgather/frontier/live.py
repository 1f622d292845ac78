"""Re-keying items inside a host's heap (OPIC: a URL's key falls as cash reaches it). Pure.

A heap cannot move an entry, so a re-keyed item gets a *new* entry with the
same ``seq`` and item (only ``priority`` changes) and the old one is left
where it is: :class:`LiveEntries` remembers the one current entry of each item
(by fingerprint), and an entry that is not it is stale and skipped when it
reaches the top (lazy deletion). Keys only ever fall (cash only grows while a
URL is queued), so the current entry always sorts first and a heap holds at
most one stale entry per credit. Breadth-first queues do not use this.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from webgather.frontier.model import CrawlItem

__all__ = ["LiveEntries"]

QueueEntry = tuple[float, int, CrawlItem]
"""``(key, seq, item)``, as in :mod:`webgather.frontier.queues`."""


@dataclass(slots=True)
class LiveEntries:
    """The current heap entry of every item held in a heap, by fingerprint."""

    by_fp: dict[int, QueueEntry] = field(default_factory=dict)

    def push(self, heap: list[QueueEntry], entry: QueueEntry) -> None:
        heapq.heappush(heap, entry)
        self.by_fp[entry[2].fp] = entry

    def is_live(self, entry: QueueEntry) -> bool:
        return self.by_fp.get(entry[2].fp) is entry

    def clean(self, heap: list[QueueEntry]) -> int:
        """Drop stale entries from the top; returns how many."""
        dropped = 0
        by_fp = self.by_fp
        while heap and by_fp.get(heap[0][2].fp) is not heap[0]:
            heapq.heappop(heap)
            dropped += 1
        return dropped

    def pop(self, heap: list[QueueEntry]) -> QueueEntry:
        """Take the top entry (live: call :meth:`clean` first)."""
        entry = heapq.heappop(heap)
        del self.by_fp[entry[2].fp]
        return entry

    def rekey(self, heap: list[QueueEntry], fp: int, key: float) -> bool:
        """Give the item ``fp`` (if held in ``heap``) the key ``key``; False if it is not held."""
        entry = self.by_fp.get(fp)
        if entry is None or entry[0] == key:
            return False
        i = entry[2]
        self.push(heap, (key, entry[1], CrawlItem(i.url, i.fp, i.depth, i.redirects, i.attempt, key, i.kind)))
        return True

    def keep_live(self, heap: list[QueueEntry]) -> int:
        """Drop every stale entry (re-heapifies); returns how many."""
        before = len(heap)
        heap[:] = [entry for entry in heap if self.by_fp.get(entry[2].fp) is entry]
        heapq.heapify(heap)
        return before - len(heap)

    def forget(self, entries: list[QueueEntry]) -> None:
        for entry in entries:
            if self.by_fp.get(entry[2].fp) is entry:
                del self.by_fp[entry[2].fp]
