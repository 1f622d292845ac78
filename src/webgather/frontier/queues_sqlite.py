"""SqliteQueues: per-host queues with every item in SQLite and a bounded head of each host in RAM.

Every queued (and in-flight) item is a row of ``queue`` (see
:mod:`webgather.frontier.store`) until it is done. RAM holds, per host, a heap
with a *prefix* of the host's queue in ``(key, seq)`` order: every row at or
after the host's ``bound`` may be on disk only, every item in the heap sorts
before ``bound`` (``None``: the heap holds all). A host's heap grows to
``host_queue_memory`` items, and all heaps together to about
``queue_memory_items``; past that, items appended at the tail stay on disk
(``bound`` is set to the first of them). An item that sorts before the tail (a
lower depth) always joins the heap; a heap twice over its limit is trimmed
back. When a heap runs dry the next chunk is read with one range query from
``bound``, skipping rows in flight.

Writes are batched twice. Every change is an op in the redo journal
(:mod:`webgather.frontier.journal`), and :meth:`SqliteQueues.commit` writes
the ops with one ``os.write``. SQLite sees the changes at
:meth:`SqliteQueues.checkpoint`: new rows wait in a dict (a row done before
the checkpoint never reaches SQLite) and go in as one ``executemany``;
a read that needs them (refill, listing, removal) writes them early, inside
the open transaction. A restart finds the hosts with work by one index probe
per known host, which also gives its head key; heaps are loaded on first use.
OPIC: re-keying and rows on disk, see :mod:`webgather.frontier.cash`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

from webgather.errors import CorruptState, FrontierError
from webgather.frontier.journal import Journal, Op
from webgather.frontier.live import LiveEntries
from webgather.frontier.model import CrawlItem
from webgather.frontier.queues import QueueEntry
from webgather.frontier.store import StateDB, signed64, unsigned64

if TYPE_CHECKING:
    from webgather.frontier.cash import CashBook

__all__ = ["SqliteQueues"]

_INSERT = ("INSERT INTO queue (host_id, key, seq, url, fp, depth, redirects, attempt, priority, kind)"
           " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_DELETE = "DELETE FROM queue WHERE seq = ?"
_COLUMNS = "key, seq, url, fp, depth, redirects, attempt, priority, kind"
_FROM = f"SELECT {_COLUMNS} FROM queue WHERE host_id = ? AND (key, seq) >= (?, ?) ORDER BY key, seq LIMIT ?"
_UNLOADED = (-math.inf, -1)
Row = tuple[float, int, str, int, int, int, int, float, str]
"""A queue row as read: key, seq, url, fp (signed), depth, redirects, attempt, priority, kind."""
FullRow = tuple[int, float, int, str, int, int, int, int, float, str]
"""A queue row as written: host_id first."""
_REFILL_MAX = 256


@dataclass(slots=True)
class _Host:
    id: int
    heap: list[QueueEntry] = field(default_factory=list)
    bound: tuple[float, int] | None = None
    top: tuple[float, int] | None = None
    """At least the largest (key, seq) in the heap."""
    hint: float | None = None
    """Head key found on restart, until the heap is first loaded."""
    accepted: int = 0


class SqliteQueues:
    """Persistent :class:`~webgather.frontier.queues.HostQueues` (see the module docstring)."""

    def __init__(self, db: StateDB, journal: Journal | None = None, *, by_depth: bool = True,
                 host_queue_memory: int = 1000, queue_memory_items: int = 1_000_000) -> None:
        self.db = db
        self.journal = journal
        """None: every commit is a checkpoint (no journal)."""
        self.by_depth = by_depth
        self.host_cap = max(1, host_queue_memory)
        self.budget = max(1, queue_memory_items)
        self.keep = self.host_cap
        """Items a host's heap may hold now: ``host_cap``, lowered while RAM is over budget."""
        self.in_memory = 0
        self.rows = int(db.meta("rows") or 0)
        """Rows in the queue table: items queued or in flight."""
        self._hosts: dict[str, _Host] = {}
        self._taken: dict[int, tuple[str, float, int]] = {}
        self._accepted_dirty: set[str] = set()
        self._pending: dict[int, FullRow] = {}
        """Rows not in SQLite yet, by seq, in seq order."""
        self._seq = int(db.meta("seq") or 0)
        self.live = None if by_depth else LiveEntries()
        self.cash: CashBook | None = None
        """OPIC: current cash of every queued item, for rows read back from disk."""
        self.replayed_cash: list[Op] = []

    @property
    def pending_rows(self) -> int:
        """Rows not yet written to SQLite (they are in the journal)."""
        return len(self._pending)

    # -- HostQueues ---------------------------------------------------------------

    def push(self, host: str, items: Sequence[CrawlItem]) -> float | None:
        h = self._host(host)
        seq, hid, by_depth, pending = self._seq, h.id, self.by_depth, self._pending
        rows: list[FullRow] = []
        for item in items:
            seq += 1
            key = float(item.depth) if by_depth else item.priority
            row = (hid, key, seq, item.url, signed64(item.fp), item.depth, item.redirects,
                   item.attempt, item.priority, item.kind)
            rows.append(row)
            pending[seq] = row
            self._place(h, (key, seq, item))
        self._seq = seq
        self.rows += len(rows)
        if self.journal is not None:
            self.journal.ops.append(("push", host, rows))
        if len(h.heap) > 2 * self.keep:
            self._trim(h, self.keep)
        if self.in_memory > self.budget + self.budget // 8:
            self._shrink()
        return self._head(h)

    def pop(self, host: str) -> tuple[CrawlItem, float | None]:
        h = self._hosts.get(host)
        if h is not None and not h.heap and h.bound is not None:
            self._refill(h)
        if h is None or not h.heap:
            raise FrontierError(f"pop() from host {host!r} with nothing queued")
        key, seq, item = heapq.heappop(h.heap) if self.live is None else self.live.pop(h.heap)
        self.in_memory -= 1
        self._taken[item.fp] = (host, key, seq)
        if self.journal is not None:
            self.journal.ops.append(("take", signed64(item.fp)))
        if self.live is not None:
            self.in_memory -= self.live.clean(h.heap)
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
        if not retry:
            self._delete(seq)
            if self.journal is not None:
                self.journal.ops.append(("done", host, key, seq, signed64(item.fp)))
            return None, self._head(h)
        again = replace(item, attempt=item.attempt + 1)
        self._set_attempt(seq, again.attempt)
        if self.journal is not None:
            self.journal.ops.append(("retry", host, key, seq, signed64(item.fp), again.attempt))
        if h.bound is None or (key, seq) < h.bound:
            self._admit(h, (key, seq, again))
        return again, self._head(h)

    def remove_host(self, host: str) -> list[CrawlItem]:
        h = self._hosts.get(host)
        if h is None:
            return []
        self.write_rows()
        rows = [r for r in self._select(h.id, _UNLOADED, -1) if unsigned64(r[3]) not in self._taken]
        self.db.conn.executemany(_DELETE, [(r[1],) for r in rows])
        if self.journal is not None:
            self.journal.ops.append(("remove", host, [(r[0], r[1]) for r in rows]))
        self.in_memory -= len(h.heap)
        if self.live is not None:
            self.live.forget(h.heap)
        h.heap, h.bound, h.top, h.hint = [], None, None, None
        self.rows -= len(rows)
        return [_item(r) for r in rows]

    def items(self, host: str, limit: int | None = None) -> list[CrawlItem]:
        h = self._hosts.get(host)
        if h is None:
            return []
        if self.live is not None:
            self.in_memory -= self.live.keep_live(h.heap)
        if limit is not None and len(h.heap) >= limit:
            return [entry[2] for entry in heapq.nsmallest(limit, h.heap)]
        self.write_rows()
        taken = self._taken
        fetch = -1 if limit is None else limit + len(taken)  # rows in flight are skipped
        rows = [r for r in self._select(h.id, _UNLOADED, fetch) if unsigned64(r[3]) not in taken]
        return [_item(r) for r in rows[:limit]]

    def commit(self) -> None:
        """Durable on return: the journal record is written (or, without a journal, a checkpoint)."""
        if self.journal is not None:
            self.journal.write()
        else:
            self.checkpoint({})

    def checkpoint(self, meta: dict[str, object]) -> None:
        """Apply everything to SQLite and commit, with ``meta`` in the same transaction."""
        self.write_rows()
        if self._accepted_dirty:
            self.db.conn.executemany("UPDATE hosts SET accepted = ? WHERE id = ?", [
                (self._hosts[host].accepted, self._hosts[host].id) for host in self._accepted_dirty])
            self._accepted_dirty.clear()
        values: dict[str, object] = {"seq": self._seq, "rows": self.rows,
                                     "in_flight": self.db.in_flight_value(self._taken)}
        values.update(meta)
        self.db.set_metas(values)
        self.db.commit()

    def replay(self, records: Iterator[list[Op]], in_flight: set[int]) -> list[bytes]:
        """Apply journal records to the rows (before :meth:`restore`); updates ``in_flight``
        (signed fps) and returns the seen-key blobs, in order."""
        seen: list[bytes] = []
        try:
            for ops in records:
                for op in ops:
                    if op[0] == "seen":
                        seen.append(op[1])
                    elif op[0] == "cash":
                        self.replayed_cash.append(op)
                    else:
                        self._replay_op(op, in_flight)
        except (IndexError, TypeError, ValueError, KeyError) as exc:
            raise CorruptState(f"frontier journal holds a malformed op: {exc}") from exc
        self._hosts.clear()
        self.in_memory = 0
        return seen

    def _replay_op(self, op: Op, in_flight: set[int]) -> None:
        kind = op[0]
        if kind == "take":
            in_flight.add(op[1])
            return
        h = self._host(op[1])
        if kind == "push":
            for row in op[2]:
                self._pending[row[2]] = (h.id, *row[1:])
                self._seq = max(self._seq, row[2])
            self.rows += len(op[2])
        elif kind == "done":
            self._delete(op[3])
            in_flight.discard(op[4])
        elif kind == "retry":
            self._set_attempt(op[3], op[5])
            in_flight.discard(op[4])
        elif kind == "remove":
            for _key, seq in op[2]:
                self._delete(seq)
        elif kind == "accepted":
            self.set_accepted(op[1], op[2])
        else:
            raise ValueError(f"unknown op {kind!r}")

    # -- beyond the protocol ---------------------------------------------------------------

    def restore(self) -> Iterator[tuple[str, float]]:
        """``(host, head key)`` of every host with rows (one index probe per known host)."""
        probe = "SELECT key FROM queue WHERE host_id = ? ORDER BY key, seq LIMIT 1"
        conn = self.db.conn
        for hid, host, accepted in conn.execute("SELECT id, host, accepted FROM hosts").fetchall():
            first = conn.execute(probe, (hid,)).fetchone()
            if first is None:
                continue
            self._hosts[host] = _Host(hid, bound=_UNLOADED, hint=first[0], accepted=accepted)
            yield host, float(first[0])

    def accepted(self, host: str) -> int:
        return self._host(host).accepted

    def set_accepted(self, host: str, count: int) -> None:
        self._host(host).accepted = count
        self._accepted_dirty.add(host)
        if self.journal is not None:
            self.journal.ops.append(("accepted", host, count))

    def reprioritize(self, host: str, fp: int, key: float) -> float | None:
        h = self._hosts.get(host)
        if h is None:
            return None
        if self.live is not None and self.live.rekey(h.heap, fp, key):
            self.in_memory += 1 - self.live.clean(h.heap)
        return self._head(h)

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

    def write_rows(self) -> None:
        if self._pending:
            self.db.conn.executemany(_INSERT, self._pending.values())
            self._pending.clear()

    def _delete(self, seq: int) -> None:
        if self._pending.pop(seq, None) is None:
            self.db.conn.execute(_DELETE, (seq,))
        self.rows -= 1

    def _set_attempt(self, seq: int, attempt: int) -> None:
        row = self._pending.get(seq)
        if row is None:
            self.db.conn.execute("UPDATE queue SET attempt = ? WHERE seq = ?", (attempt, seq))
        else:
            self._pending[seq] = (*row[:7], attempt, *row[8:])

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
        elif (len(h.heap) < self.keep and self.in_memory < self.budget) or (
                h.top is not None and order < h.top):
            self._admit(h, entry)  # the heap must stay a prefix: an item before its tail goes in
        else:
            h.bound = order

    def _admit(self, h: _Host, entry: QueueEntry) -> None:
        (heapq.heappush if self.live is None else self.live.push)(h.heap, entry)
        self.in_memory += 1
        order = (entry[0], entry[1])
        if h.top is None or order > h.top:
            h.top = order

    def _trim(self, h: _Host, keep: int) -> None:
        """Keep the host's first ``keep`` items in RAM; the rest wait on disk."""
        if self.live is not None:
            self.in_memory -= self.live.keep_live(h.heap)
            if len(h.heap) <= keep:
                return
        h.heap.sort()
        evicted = len(h.heap) - keep
        h.bound = (h.heap[keep][0], h.heap[keep][1])
        if self.live is not None:
            self.live.forget(h.heap[keep:])
        del h.heap[keep:]
        self.in_memory -= evicted
        h.top = (h.heap[-1][0], h.heap[-1][1]) if h.heap else None

    def _shrink(self) -> None:
        """Over budget: cut the largest heaps to one level, so all fit in 3/4 of the budget."""
        sizes = sorted(len(h.heap) for h in self._hosts.values())
        target, level, below = self.budget * 3 // 4, 0, 0
        for i, size in enumerate(sizes):  # water-filling: the highest level that fits
            if below + size * (len(sizes) - i) > target:
                level = max(0, (target - below) // (len(sizes) - i))
                break
            below += size
        else:
            return
        for h in self._hosts.values():
            if len(h.heap) > level:
                self._trim(h, level)
        self.keep = max(1, level)

    def _refill(self, h: _Host) -> None:
        self.write_rows()
        if self.keep < self.host_cap and self.in_memory < self.budget // 2:
            self.keep = min(self.host_cap, 2 * self.keep)
        chunk = min(self.keep, _REFILL_MAX)
        taken = self._taken
        while not h.heap and h.bound is not None:
            rows = self._select(h.id, h.bound, chunk + 1)
            h.hint = None
            h.bound = (rows[chunk][0], rows[chunk][1]) if len(rows) > chunk else None
            for row in rows[:chunk]:
                if unsigned64(row[3]) not in taken:  # (OPIC: with the cash the URL holds now)
                    entry = (row[0], row[1], _item(row))
                    self._admit(h, entry if self.cash is None else self.cash.rekeyed(entry))

    def _select(self, hid: int, bound: tuple[float, int], limit: int) -> list[Row]:
        cursor = self.db.conn.execute(_FROM, (hid, bound[0], bound[1], limit))
        return cast(list[Row], cursor.fetchall())


def _item(row: Row) -> CrawlItem:
    _, _, url, fp, depth, redirects, attempt, priority, kind = row
    return CrawlItem(url, unsigned64(fp), depth, redirects, attempt, priority, kind)
