"""OPIC cash of queued URLs (Abiteboul, Preda & Cobena 2003): the table, the history, persistence.

A fetched page's cash is split evenly over its distinct out-links (the node's
pipeline does the split and sends each share with the link as
``CrawlItem.priority = -share``); a URL not yet fetched accumulates the shares
of every link to it, also those that reach it after it was queued (the
seen-test would drop such a link, so :meth:`CashBook.credit` adds its share
first). Under ``order = "opic"`` a queued item's key is ``-cash``: the frontier
serves, within the politeness rules, the host whose head is richest, and inside
a host its richest URL.

When a page is fetched its cash goes to ``history`` (one total per node: this
crawl fetches each URL once, so a per-page history would never be read). A
page without out-links, or whose links all fall outside the scope, keeps its
cash in history too: that is the paper's *virtual page*, except that we do
not redistribute it, because an even gift to every queued URL changes no
order among them (the choice :mod:`webgather.sim.order` makes as well).

Memory: :class:`CashTable` keeps ``fp -> cash`` in two sorted numpy arrays
(16 bytes an entry) plus a dict of recent entries that is merged into them once
it holds 1/16 of their size. Persistence (a frontier with ``state_dir``): a
queue row carries the cash of its item when it was pushed; a credit is a
``("cash", fps, values)`` op in the redo journal (absolute values, so replay
is idempotent) and at a checkpoint goes to the ``cash`` table of SQLite; the
rows of URLs fetched since are deleted there. :func:`load_cash` rebuilds the
table on open.

Re-keying: a queued item held in RAM gets a new heap entry at once
(:mod:`webgather.frontier.live`). A row that waits on disk keeps the key it was
pushed with and takes its current cash when its chunk is read back
(``SqliteQueues`` refills in the pushed order and re-keys from this table): the
disk holds only the tail of a host's queue (past ``host_queue_memory``), the
poorest URLs when they were pushed, so a tail URL that got richer meanwhile
waits until the head above it is served; keeping the disk order exact would
cost an UPDATE per credited link and an index on fingerprints.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from webgather.errors import CorruptState
from webgather.frontier.model import CrawlItem
from webgather.frontier.store import signed64, unsigned64

if TYPE_CHECKING:
    from webgather.frontier.frontier import Frontier
    from webgather.frontier.journal import Journal, Op
    from webgather.frontier.store import StateDB

__all__ = ["CashBook", "CashTable", "load_cash"]

_MIN_MERGE = 4096
_U64 = np.uint64


class CashTable:
    """``fingerprint -> cash``: sorted arrays (16 bytes an entry) and a small dict of new entries."""

    def __init__(self) -> None:
        self._keys = np.empty(0, dtype=np.uint64)
        self._vals = np.empty(0, dtype=np.float64)
        self._delta: dict[int, float] = {}
        self._dead = 0

    def __len__(self) -> int:
        return len(self._keys) - self._dead + len(self._delta)

    def nbytes(self) -> int:
        """Bytes of the arrays (the dict holds at most 1/16 of their entries, plus 4096)."""
        return int(self._keys.nbytes + self._vals.nbytes)

    def get(self, fp: int) -> float | None:
        value = self._delta.get(fp)
        if value is not None:
            return value
        i = self._find(fp)
        return None if i < 0 else float(self._vals[i])

    def put(self, fp: int, cash: float) -> None:
        """Set the cash of ``fp`` (added if missing)."""
        i = self._find(fp) if fp not in self._delta else -1
        if i >= 0:
            self._vals[i] = cash
            return
        self._delta[fp] = cash
        if len(self._delta) >= max(_MIN_MERGE, len(self._keys) // 16):
            self._merge()

    def pop(self, fp: int) -> float | None:
        value = self._delta.pop(fp, None)
        if value is not None:
            return value
        i = self._find(fp)
        if i < 0:
            return None
        value = float(self._vals[i])
        self._vals[i] = math.nan  # a tombstone, dropped by the next merge
        self._dead += 1
        return value

    def add_many(self, fps: np.ndarray, amounts: np.ndarray) -> np.ndarray:
        """Add ``amounts`` to the cash of those ``fps`` present (each time a fp repeats);
        returns the cash of each after its addition, NaN where absent. One array search."""
        out = np.full(len(fps), np.nan)
        keys, vals = self._keys, self._vals
        hit = np.zeros(len(fps), dtype=bool)
        if len(keys):
            idx = np.minimum(np.searchsorted(keys, fps), len(keys) - 1)
            hit = (keys[idx] == fps) & ~np.isnan(vals[idx])
            np.add.at(vals, idx[hit], amounts[hit])
            out[hit] = vals[idx[hit]]
        delta = self._delta
        if delta:
            for i in np.flatnonzero(~hit).tolist():
                old = delta.get(fp := int(fps[i]))
                if old is not None:
                    delta[fp] = out[i] = old + float(amounts[i])
        return out

    def load(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Replace the content by these entries (one per key)."""
        order = np.argsort(keys, kind="stable")
        self._keys, self._vals = keys.astype(np.uint64)[order], values.astype(np.float64)[order]
        self._delta, self._dead = {}, 0

    def _find(self, fp: int) -> int:
        keys = self._keys
        i = int(np.searchsorted(keys, _U64(fp)))
        if i < len(keys) and int(keys[i]) == fp and not math.isnan(self._vals[i]):
            return i
        return -1

    def _merge(self) -> None:
        live = ~np.isnan(self._vals)
        n = len(self._delta)
        keys = np.concatenate((self._keys[live], np.fromiter(self._delta.keys(), dtype=np.uint64, count=n)))
        vals = np.concatenate((self._vals[live], np.fromiter(self._delta.values(), dtype=np.float64, count=n)))
        self.load(keys, vals)


class CashBook:
    """The frontier's OPIC state: cash of queued (and in-flight) URLs and the history total."""

    def __init__(self, history: float = 0.0) -> None:
        self.table = CashTable()
        self.history = history
        """Cash of the pages fetched so far (the paper's history, summed over pages)."""
        self.journal: Journal | None = None
        self._dirty: set[int] = set()
        self._gone: set[int] = set()

    def queued(self, items: Iterable[CrawlItem]) -> None:
        """New items entered the queues, each with the cash it carries (``-priority``, at least 0)."""
        put = self.table.put
        for item in items:
            put(item.fp, -item.priority if item.priority < 0.0 else 0.0)

    def credit(self, pairs: Iterable[tuple[str, CrawlItem]]) -> list[tuple[str, int, float]]:
        """Add the cash each ``(host, item)`` brings (``-priority``) to its URL if that is queued or
        in flight; returns ``(host, fp, new cash)`` of those (journaled)."""
        carrying = [(host, item) for host, item in pairs if item.priority < 0.0]
        if not carrying:
            return []
        n = len(carrying)
        new = self.table.add_many(np.fromiter((item.fp for _, item in carrying), dtype=np.uint64, count=n),
                                  np.fromiter((-item.priority for _, item in carrying), dtype=np.float64, count=n))
        changed = [(carrying[i][0], carrying[i][1].fp, float(new[i])) for i in np.flatnonzero(~np.isnan(new)).tolist()]
        if changed:
            self._dirty.update(fp for _, fp, _ in changed)
            if self.journal is not None:
                self.journal.ops.append(("cash", [signed64(fp) for _, fp, _ in changed], [c for *_, c in changed]))
        return changed

    def credit_queued(self, pairs: Iterable[tuple[str, CrawlItem]], frontier: Frontier, now: float) -> None:
        """:meth:`credit`, and re-key the URLs in their queues and their hosts in the ready-heap."""
        for host, fp, cash in self.credit(pairs):
            frontier.policy.set_head(host, frontier.queues.reprioritize(host, fp, -cash), now)

    def replayed(self, fp: int, cash: float) -> None:
        """A journaled credit replayed while the book is loaded: ``fp`` holds ``cash`` if it is still
        queued (and is written back with the next checkpoint)."""
        if self.table.get(fp) is not None:
            self.table.put(fp, float(cash))
            self._dirty.add(fp)

    def stats(self) -> dict[str, int | float]:
        return {"cash_history": self.history, "cash_entries": len(self.table)}

    def done(self, fp: int) -> None:
        """The page was fetched (or given up): its cash goes to history."""
        cash = self.table.pop(fp)
        if cash is not None:
            self.history += cash
            self._gone.add(fp)

    def forget(self, items: Iterable[CrawlItem]) -> None:
        """Items left this frontier unfetched (hand-off, dropped host): their cash leaves with them."""
        for item in items:
            if self.table.pop(item.fp) is not None:
                self._gone.add(item.fp)

    def current(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        """The items with the cash they hold now (a row read from disk carries its cash when pushed)."""
        get = self.table.get
        return [item if (c := get(item.fp)) is None or c == -item.priority else replace(item, priority=-c)
                for item in items]

    def rekeyed(self, entry: tuple[float, int, CrawlItem]) -> tuple[float, int, CrawlItem]:
        """A heap entry read back from disk, keyed by the cash its URL holds now."""
        cash = self.table.get(entry[2].fp)
        if cash is None or -cash == entry[0]:
            return entry
        return -cash, entry[1], replace(entry[2], priority=-cash)

    def write(self, db: StateDB) -> None:
        """Into SQLite (inside the caller's transaction): changed cash, and rows of URLs gone."""
        conn, get = db.conn, self.table.get
        rows = [(signed64(fp), cash) for fp in self._dirty if (cash := get(fp)) is not None]
        if rows:
            conn.executemany("INSERT OR REPLACE INTO cash (fp, cash) VALUES (?, ?)", rows)
        gone = [(signed64(fp),) for fp in self._gone - self._dirty] + [
            (signed64(fp),) for fp in self._dirty if get(fp) is None]
        if gone:
            conn.executemany("DELETE FROM cash WHERE fp = ?", gone)
        self._dirty.clear()
        self._gone.clear()
        db.set_meta("cash_history", repr(self.history))


def load_cash(db: StateDB, replayed: Sequence[Op]) -> CashBook:
    """The cash book of a frontier being opened: queue rows, then the ``cash`` table, then the
    journal's credits (``replayed``); the queue rows must be in SQLite already."""
    try:
        book = CashBook(float(db.meta("cash_history") or 0.0))
    except (TypeError, ValueError) as exc:
        raise _malformed(db, exc) from exc
    conn = db.conn
    rows = conn.execute("SELECT fp, priority FROM queue").fetchall()
    fps = np.array([r[0] for r in rows], dtype=np.int64).view(np.uint64)
    book.table.load(fps, np.array([max(0.0, -r[1]) for r in rows], dtype=np.float64))
    conn.execute("DELETE FROM cash WHERE fp NOT IN (SELECT fp FROM queue)")
    for fp, cash in conn.execute("SELECT fp, cash FROM cash"):
        book.table.put(unsigned64(fp), cash)
    try:
        for op in replayed:
            for fp, cash in zip(op[1], op[2], strict=True):
                book.replayed(unsigned64(fp), cash)
    except (IndexError, TypeError, ValueError) as exc:
        raise _malformed(db, exc) from exc
    return book


def _malformed(db: StateDB, exc: Exception) -> CorruptState:
    return CorruptState(f"frontier state {db.path}: a malformed cash record: {exc}")
