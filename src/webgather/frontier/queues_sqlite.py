"""SqliteQueues: per-host queues with every item in SQLite and a bounded head of each host in RAM.

Every queued (and in-flight) item is a row of ``queue`` (see
:mod:`webgather.frontier.store`), written as it is pushed and deleted when it
is done. RAM holds, per host, a heap with a *prefix* of the host's queue in
``(key, seq)`` order: every row at or after the host's ``bound`` may be on
disk only, every item in the heap sorts before ``bound`` (``None``: the heap
holds all). A host's heap grows to ``host_queue_memory`` items, and all heaps
together to about ``queue_memory_items``; past that, items appended at the tail
stay on disk (``bound`` is set to the first of them). An item that sorts before
the tail (a lower depth) always joins the heap; a heap twice over its limit is
trimmed back. When a heap runs dry the next chunk is read with one range query
from ``bound``, skipping rows in flight.

Per host the row count, accepted count and head key are kept in ``hosts`` and
updated at each commit, so a restart finds the hosts with work without
scanning the queue; their heaps are loaded lazily, on first use.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from webgather.errors import FrontierError
from webgather.frontier.model import CrawlItem
from webgather.frontier.queues import QueueEntry
from webgather.frontier.store import StateDB, signed64, unsigned64

__all__ = ["SqliteQueues"]

_INSERT = ("INSERT INTO queue (host_id, key, seq, url, fp, depth, redirects, attempt, priority, kind)"
           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_COLUMNS = "key, seq, url, fp, depth, redirects, attempt, priority, kind"
_FROM = f"SELECT {_COLUMNS} FROM queue WHERE host_id = ? AND (key, seq) >= (?, ?) ORDER BY key, seq LIMIT ?"
_UNLOADED = (-math.inf, -1)
Row = tuple[float, int, str, int, int, int, int, float, str]
"""A queue row as read: key, seq, url, fp (signed), depth, redirects, attempt, priority, kind."""
_REFILL_MAX = 256


@dataclass(slots=True)
class _Host:
    id: int
    heap: list[QueueEntry] = field(default_factory=list)
    bound: tuple[float, int] | None = None
    top: tuple[float, int] | None = None
    """At least the largest (key, seq) in the heap."""
    hint: float | None = None
    """Head key recorded by the last run, until the heap is first loaded."""
    delta: int = 0
    accepted: int = 0


class SqliteQueues:
    """Persistent :class:`~webgather.frontier.queues.HostQueues` (see the module docstring)."""

    def __init__(self, db: StateDB, *, by_depth: bool = True, host_queue_memory: int = 1000,
                 queue_memory_items: int = 1_000_000) -> None:
        self.db = db
        self.by_depth = by_depth
        self.host_cap = max(1, host_queue_memory)
        self.budget = max(1, queue_memory_items)
        self.in_memory = 0
        self._hosts: dict[str, _Host] = {}
        self._taken: dict[int, tuple[str, float, int]] = {}
        self._dirty: set[str] = set()
        self._seq = int(db.meta("seq") or 0)

    # -- HostQueues ---------------------------------------------------------------

    def push(self, host: str, items: Sequence[CrawlItem]) -> float | None:
        h = self._host(host)
        seq, hid, by_depth, rows = self._seq, h.id, self.by_depth, []
        for item in items:
            seq += 1
            key = float(item.depth) if by_depth else item.priority
            rows.append((hid, key, seq, item.url, signed64(item.fp), item.depth, item.redirects,
                         item.attempt, item.priority, item.kind))
            self._place(h, (key, seq, item))
        self._seq = seq
        self.db.conn.executemany(_INSERT, rows)
        h.delta += len(rows)
        self._dirty.add(host)
        if len(h.heap) > 2 * self.host_cap:
            self._trim(h)
        return self._head(h)

    def pop(self, host: str) -> tuple[CrawlItem, float | None]:
        h = self._hosts.get(host)
        if h is not None and not h.heap and h.bound is not None:
            self._refill(h)
        if h is None or not h.heap:
            raise FrontierError(f"pop() from host {host!r} with nothing queued")
        key, seq, item = heapq.heappop(h.heap)
        self.in_memory -= 1
        self._taken[item.fp] = (host, key, seq)
        self.db.mark_taken(item.fp)
        self._dirty.add(host)
        if not h.heap:
            h.top = None
        return item, self._head(h)

    def finish(self, host: str, item: CrawlItem, retry: bool) -> tuple[CrawlItem | None, float | None]:
        taken = self._taken.get(item.fp)
        if taken is None or taken[0] != host:
            raise FrontierError(f"finish() of {item.url!r}, which is not in flight")
        del self._taken[item.fp]
        _, key, seq = taken
        h = self._hosts[host]
        self.db.unmark_taken(item.fp)
        self._dirty.add(host)
        if not retry:
            self.db.conn.execute("DELETE FROM queue WHERE host_id = ? AND key = ? AND seq = ?", (h.id, key, seq))
            h.delta -= 1
            return None, self._head(h)
        again = replace(item, attempt=item.attempt + 1)
        self.db.conn.execute("UPDATE queue SET attempt = ? WHERE host_id = ? AND key = ? AND seq = ?",
                             (again.attempt, h.id, key, seq))
        if h.bound is None or (key, seq) < h.bound:
            self._admit(h, (key, seq, again))
        return again, self._head(h)

    def remove_host(self, host: str) -> list[CrawlItem]:
        h = self._hosts.get(host)
        if h is None:
            return []
        rows = [r for r in self._select(h.id, _UNLOADED, -1) if unsigned64(r[3]) not in self._taken]
        self.db.conn.executemany("DELETE FROM queue WHERE host_id = ? AND key = ? AND seq = ?",
                                 [(h.id, r[0], r[1]) for r in rows])
        self.in_memory -= len(h.heap)
        h.heap, h.bound, h.top, h.hint = [], None, None, None
        h.delta -= len(rows)
        self._dirty.add(host)
        return [_item(r) for r in rows]

    def items(self, host: str, limit: int | None = None) -> list[CrawlItem]:
        h = self._hosts.get(host)
        if h is None:
            return []
        if limit is not None and len(h.heap) >= limit:
            return [entry[2] for entry in heapq.nsmallest(limit, h.heap)]
        taken = self._taken
        rows = [r for r in self._select(h.id, _UNLOADED, -1) if unsigned64(r[3]) not in taken]
        return [_item(r) for r in rows[:limit]]

    def commit(self) -> None:
        if self._dirty:
            updates = []
            for host in self._dirty:
                h = self._hosts[host]
                updates.append((h.delta, h.accepted, self._head(h), h.id))
                h.delta = 0
            self.db.conn.executemany(
                "UPDATE hosts SET queued = queued + ?, accepted = ?, head = ? WHERE id = ?", updates)
            self._dirty.clear()
        self.db.set_meta("seq", self._seq)
        self.db.commit()

    # -- beyond the protocol ---------------------------------------------------------------

    def restore(self) -> Iterator[tuple[str, int, float | None]]:
        """``(host, queued rows, head key)`` of every host with rows, as the last commit left them."""
        query = "SELECT id, host, queued, accepted, head FROM hosts WHERE queued > 0"
        for hid, host, queued, accepted, head in self.db.conn.execute(query).fetchall():
            h = self._hosts[host] = _Host(hid, bound=_UNLOADED, hint=head, accepted=accepted)
            if head is None:  # its rows were all in flight when the head was recorded
                self._refill(h)
            yield host, int(queued), self._head(h)

    def accepted(self, host: str) -> int:
        return self._host(host).accepted

    def set_accepted(self, host: str, count: int) -> None:
        self._host(host).accepted = count
        self._dirty.add(host)

    def queued_in_memory(self, host: str) -> int:
        h = self._hosts.get(host)
        return 0 if h is None else len(h.heap)

    # -- internals ------------------------------------------------------------------------

    def _host(self, host: str) -> _Host:
        h = self._hosts.get(host)
        if h is None:
            conn = self.db.conn
            row = conn.execute("SELECT id, accepted FROM hosts WHERE host = ?", (host,)).fetchone()
            if row is None:
                hid = conn.execute("INSERT INTO hosts (host) VALUES (?)", (host,)).lastrowid
                row = (hid, 0)
            h = self._hosts[host] = _Host(int(row[0]), accepted=int(row[1]))
        return h

    def _head(self, h: _Host) -> float | None:
        if h.heap:
            return h.heap[0][0]
        if h.bound is None:
            return None
        return h.hint if h.hint is not None else h.bound[0]

    def _place(self, h: _Host, entry: QueueEntry) -> None:
        order = (entry[0], entry[1])
        if h.bound is not None:
            if order < h.bound:
                self._admit(h, entry)
        elif (len(h.heap) < self.host_cap and self.in_memory < self.budget) or (
                h.top is not None and order < h.top):
            self._admit(h, entry)
        else:
            h.bound = order

    def _admit(self, h: _Host, entry: QueueEntry) -> None:
        heapq.heappush(h.heap, entry)
        self.in_memory += 1
        order = (entry[0], entry[1])
        if h.top is None or order > h.top:
            h.top = order

    def _trim(self, h: _Host) -> None:
        h.heap.sort()
        evicted = h.heap[self.host_cap:]
        del h.heap[self.host_cap:]
        self.in_memory -= len(evicted)
        h.bound = (evicted[0][0], evicted[0][1])
        h.top = (h.heap[-1][0], h.heap[-1][1])

    def _refill(self, h: _Host) -> None:
        chunk = min(self.host_cap, _REFILL_MAX)
        taken = self._taken
        while not h.heap and h.bound is not None:
            rows = self._select(h.id, h.bound, chunk + 1)
            h.hint = None
            h.bound = (rows[chunk][0], rows[chunk][1]) if len(rows) > chunk else None
            for row in rows[:chunk]:
                if unsigned64(row[3]) not in taken:
                    self._admit(h, (row[0], row[1], _item(row)))

    def _select(self, hid: int, bound: tuple[float, int], limit: int) -> list[Row]:
        cursor = self.db.conn.execute(_FROM, (hid, bound[0], bound[1], limit))
        return cast(list[Row], cursor.fetchall())


def _item(row: Row) -> CrawlItem:
    _, _, url, fp, depth, redirects, attempt, priority, kind = row
    return CrawlItem(url, unsigned64(fp), depth, redirects, attempt, priority, kind)
