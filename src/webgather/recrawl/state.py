"""The per-URL re-crawl state of one node: SQLite at ``DIR/state/urls.sqlite``.

One row per URL the node fetched (keyed by its 64-bit fingerprint, stored
signed), holding a :class:`~webgather.recrawl.observe.UrlRecord`; one row per
cycle (status ``planned`` -> ``running`` -> ``done``, the plan's size, the
frontier's queue length before the plan was queued) and per-cycle counters.
Each node of a cluster keeps its own file under its own directory. A row also
stores the URL's cluster bucket (``bucket_of``, given by the node: the frontier's
host -> bucket step), so the rows of one bucket can be exported, merged into
another node's state (the newest record of a URL wins) and dropped when the
bucket changes hands (:meth:`UrlState.export_rows` / :meth:`UrlState.merge_rows` /
:meth:`UrlState.drop_rows`); a node plans revisits only for the buckets it owns.

Durability: WAL, ``synchronous=NORMAL``; every :meth:`UrlState.put` is one
transaction (the record and the cycle's counters together), committed before
the frontier marks the fetch done, so after a kill -9 a visit is either
recorded or fetched again. The ``planned`` status makes planning safe: the
plan (pending marks) is committed before it is queued in the frontier, and
``queued_before`` tells on resume whether the queueing happened.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from webgather.errors import CorruptState, StoreError
from webgather.recrawl.observe import UrlRecord
from webgather.store.warc import ArchiveRef

__all__ = ["STATE_NAME", "CycleRow", "PlanArrays", "UrlState", "newer", "state_path"]

STATE_NAME = "urls.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
  fp INTEGER PRIMARY KEY, url TEXT NOT NULL, kind TEXT, depth INTEGER,
  first_fetch_s REAL, last_fetch_s REAL, last_change_s REAL, status INTEGER,
  etag TEXT, last_modified TEXT, digest TEXT, simhash INTEGER, original TEXT, links_digest TEXT,
  visits INTEGER, changes INTEGER, history TEXT, rate_per_s REAL, failures INTEGER,
  dead TEXT, dead_cycle INTEGER, near_dup_of TEXT, pending_cycle INTEGER, first_age_s REAL, bucket INTEGER
);
CREATE INDEX IF NOT EXISTS urls_dead ON urls(dead_cycle) WHERE dead IS NOT NULL;
CREATE TABLE IF NOT EXISTS cycles (
  id INTEGER PRIMARY KEY, status TEXT NOT NULL, started_s REAL, finished_s REAL,
  policy TEXT, budget INTEGER, planned INTEGER, queued_before INTEGER
);
CREATE TABLE IF NOT EXISTS robots (
  host TEXT PRIMARY KEY, status INTEGER, body BLOB, fetched_s REAL
);
CREATE TABLE IF NOT EXISTS cycle_counts (
  cycle INTEGER, name TEXT, n INTEGER, PRIMARY KEY (cycle, name)
);
"""
_COLUMNS = [f.name for f in fields(UrlRecord)]
_PUT = (f"INSERT OR REPLACE INTO urls ({', '.join(_COLUMNS)}, bucket)"
        f" VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})")
_COUNT = ("INSERT INTO cycle_counts (cycle, name, n) VALUES (?, ?, ?)"
          " ON CONFLICT (cycle, name) DO UPDATE SET n = n + excluded.n")


@dataclass(frozen=True, slots=True)
class CycleRow:
    id: int
    status: str
    """"planned" (plan committed, maybe not queued yet), "running" or "done"."""
    started_s: float
    finished_s: float | None
    policy: str
    budget: int | None
    planned: int
    queued_before: int


@dataclass(frozen=True, slots=True)
class PlanArrays:
    """The active URLs not already queued, as arrays for the policies."""

    fp: np.ndarray
    last_fetch_s: np.ndarray
    rate_per_s: np.ndarray
    n_obs: np.ndarray
    first_age_s: np.ndarray
    """nan where unknown."""
    bucket: np.ndarray
    """The row's bucket (-1 where unknown)."""

    def take(self, keep: np.ndarray) -> PlanArrays:
        """The rows where ``keep`` (a boolean mask) is true."""
        return PlanArrays(self.fp[keep], self.last_fetch_s[keep], self.rate_per_s[keep], self.n_obs[keep],
                          self.first_age_s[keep], self.bucket[keep])


def newer(a: UrlRecord, b: UrlRecord) -> bool:
    """True if ``a`` is a later record of the URL than ``b`` (more recent visit, then more visits)."""
    def key(r: UrlRecord) -> tuple[float, int]:
        t = r.last_fetch_s if not math.isnan(r.last_fetch_s) else -math.inf
        return t, r.visits
    return key(a) > key(b)


def _signed(fp: int) -> int:
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def _unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


class UrlState:
    """Open with :meth:`open`; one owner (the node's event loop), not thread-safe."""

    def __init__(self, db: sqlite3.Connection, path: Path, bucket_of: Callable[[str], int] | None = None) -> None:
        self._db = db
        self.path = path
        self.bucket_of = bucket_of
        """URL -> cluster bucket, stored with every row written (None: no bucket)."""

    @classmethod
    def open(cls, path: Path, bucket_of: Callable[[str], int] | None = None) -> UrlState:
        """Open (creating) the state file at ``path``; ``bucket_of``: URL -> cluster bucket (a cluster node's)."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            if "bucket" not in {row[1] for row in db.execute("PRAGMA table_info(urls)")}:
                db.execute("ALTER TABLE urls ADD COLUMN bucket INTEGER")  # a state from before the cluster re-crawl
            db.execute("CREATE INDEX IF NOT EXISTS urls_bucket ON urls(bucket)")
        except sqlite3.DatabaseError as exc:
            raise CorruptState(f"{path}: not a usable re-crawl state ({exc})") from exc
        except OSError as exc:
            raise StoreError(f"cannot open {path}: {exc.strerror}") from exc
        return cls(db, path, bucket_of)

    def close(self) -> None:
        self._db.close()

    # -- records -----------------------------------------------------------------
    def get(self, fp: int) -> UrlRecord | None:
        row = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM urls WHERE fp = ?", (_signed(fp),)).fetchone()
        return None if row is None else _record(row)

    def put(self, record: UrlRecord, cycle: int, counts: dict[str, int]) -> None:
        """Save ``record`` and add ``counts`` to the cycle's counters, in one transaction."""
        with self._transaction():
            self._db.execute(_PUT, self._row(record))
            self._db.executemany(_COUNT, [(cycle, k, v) for k, v in counts.items() if v])

    def put_many(self, records: Iterable[UrlRecord], cycle: int, counter: str) -> int:
        """Save many records and add their number to the cycle's ``counter``, in one transaction."""
        rows = [self._row(r) for r in records]
        with self._transaction():
            self._db.executemany(_PUT, rows)
            self._db.execute(_COUNT, (cycle, counter, len(rows)))
        return len(rows)

    def records(self, where: str = "1", params: Sequence[Any] = ()) -> Iterator[UrlRecord]:
        """Records matching an SQL condition on the columns (internal callers only)."""
        for row in self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM urls WHERE {where} ORDER BY fp", params):
            yield _record(row)

    def plan_arrays(self, buckets: Collection[int] | None = None) -> PlanArrays:
        """The plannable rows (of ``buckets`` only, if given: a cluster node's own)."""
        rows = self._db.execute(
            "SELECT fp, last_fetch_s, rate_per_s, json_array_length(history), first_age_s, bucket FROM urls"
            " WHERE dead IS NULL AND pending_cycle IS NULL AND last_fetch_s IS NOT NULL ORDER BY fp"
        ).fetchall()
        arrays = PlanArrays(
            np.array([_unsigned(r[0]) for r in rows], dtype=np.uint64),
            np.array([r[1] for r in rows], dtype=float),
            np.array([r[2] or 0.0 for r in rows], dtype=float),
            np.array([r[3] or 0 for r in rows], dtype=float),
            np.array([math.nan if r[4] is None else r[4] for r in rows], dtype=float),
            np.array([-1 if r[5] is None else r[5] for r in rows], dtype=np.int64),
        )
        if buckets is None:
            return arrays
        return arrays.take(np.isin(arrays.bucket, np.fromiter(buckets, dtype=np.int64)))

    # -- buckets (a cluster node's rows follow its buckets) ----------------------------
    def fill_buckets(self) -> int:
        """Give rows written without a bucket (older state, before ``bucket_of`` was set) theirs."""
        if self.bucket_of is None:
            return 0
        rows = self._db.execute("SELECT fp, url FROM urls WHERE bucket IS NULL").fetchall()
        with self._transaction():
            self._db.executemany("UPDATE urls SET bucket = ? WHERE fp = ?",
                                 [(self.bucket_of(str(url)), fp) for fp, url in rows])
        return len(rows)

    def buckets(self) -> list[int]:
        """Buckets of which this state holds rows."""
        return [int(b) for (b,) in self._db.execute("SELECT DISTINCT bucket FROM urls WHERE bucket IS NOT NULL")]

    def export_rows(self, bucket: int) -> list[UrlRecord]:
        """The records of one bucket (a copy: :meth:`drop_rows` forgets them)."""
        return list(self.records("bucket = ?", (bucket,)))

    def merge_rows(self, records: Iterable[UrlRecord]) -> int:
        """Merge records handed over by another node: per URL the newest wins; returns how many were taken."""
        taken = []
        for record in records:
            mine = self.get(record.fp)
            if mine is None or newer(record, mine):
                taken.append(record)
        with self._transaction():
            self._db.executemany(_PUT, [self._row(r) for r in taken])
        return len(taken)

    def drop_rows(self, buckets: Iterable[int]) -> int:
        """Forget the rows of ``buckets`` (handed over to their new owner)."""
        with self._transaction():
            return sum(self._db.execute("DELETE FROM urls WHERE bucket = ?", (b,)).rowcount for b in buckets)

    def active_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(last fetch time, rate estimate) of every active URL with a response."""
        rows = self._db.execute(
            "SELECT last_fetch_s, rate_per_s FROM urls WHERE dead IS NULL AND last_fetch_s IS NOT NULL"
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=float), np.array([r[1] or 0.0 for r in rows], dtype=float)

    def simhashes(self) -> Iterator[tuple[int, int]]:
        for fp, value in self._db.execute("SELECT fp, simhash FROM urls WHERE simhash IS NOT NULL AND dead IS NULL"):
            yield _unsigned(fp), _unsigned(value)

    def url_of(self, fp: int) -> str | None:
        row = self._db.execute("SELECT url FROM urls WHERE fp = ?", (_signed(fp),)).fetchone()
        return None if row is None else str(row[0])

    def totals(self) -> dict[str, int]:
        row = self._db.execute(
            "SELECT COUNT(*), SUM(dead IS NULL), SUM(dead IS NOT NULL), SUM(near_dup_of IS NOT NULL),"
            " SUM(pending_cycle IS NOT NULL) FROM urls"
        ).fetchone()
        names = ("urls", "active", "dead", "near_duplicates", "pending")
        return {name: int(value or 0) for name, value in zip(names, row)}

    def dead_urls(self, cycle: int | None = None) -> list[tuple[str, str]]:
        """(url, reason) of dead pages (those that died in ``cycle`` if given)."""
        sql = "SELECT url, dead FROM urls WHERE dead IS NOT NULL"
        rows = self._db.execute(sql + (" AND dead_cycle = ?" if cycle is not None else "") + " ORDER BY url",
                                (cycle,) if cycle is not None else ())
        return [(str(u), str(d)) for u, d in rows]

    # -- robots.txt ----------------------------------------------------------------
    def robots_get(self, host: str) -> tuple[int, bytes, float] | None:
        """(status, body, wall time) of the host's last robots.txt answer, if any."""
        row = self._db.execute("SELECT status, body, fetched_s FROM robots WHERE host = ?", (host,)).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]), float(row[2]))

    def robots_put(self, host: str, status: int, body: bytes, fetched_s: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO robots (host, status, body, fetched_s) VALUES (?, ?, ?, ?)",
                         (host, status, body, fetched_s))

    # -- cycles ------------------------------------------------------------------
    def last_cycle(self) -> CycleRow | None:
        row = self._db.execute(
            "SELECT id, status, started_s, finished_s, policy, budget, planned, queued_before"
            " FROM cycles ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else CycleRow(*row)

    def plan_cycle(self, row: CycleRow, pending: Iterable[int]) -> None:
        """Record a new cycle as ``planned`` and mark its revisits pending, in one transaction."""
        with self._transaction():
            self._db.execute(
                "INSERT INTO cycles (id, status, started_s, finished_s, policy, budget, planned, queued_before)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (row.id, row.status, row.started_s, row.finished_s, row.policy, row.budget, row.planned,
                 row.queued_before),
            )
            self._db.executemany("UPDATE urls SET pending_cycle = ? WHERE fp = ?",
                                 [(row.id, _signed(fp)) for fp in pending])

    def set_cycle_status(self, cycle: int, status: str, finished_s: float | None = None) -> None:
        self._db.execute("UPDATE cycles SET status = ?, finished_s = ? WHERE id = ?", (status, finished_s, cycle))

    def clear_pending(self) -> int:
        """Forget every pending mark (the frontier holds no revisit any more); returns how many."""
        return self._db.execute("UPDATE urls SET pending_cycle = NULL WHERE pending_cycle IS NOT NULL").rowcount

    def cycle_counts(self, cycle: int) -> dict[str, int]:
        rows = self._db.execute("SELECT name, n FROM cycle_counts WHERE cycle = ? ORDER BY name", (cycle,))
        return {str(name): int(n) for name, n in rows}

    def pending_records(self, cycle: int) -> list[UrlRecord]:
        return list(self.records("pending_cycle = ?", (cycle,)))

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def _row(self, record: UrlRecord) -> tuple[Any, ...]:
        return (*_row(record), None if self.bucket_of is None else self.bucket_of(record.url))


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _row(record: UrlRecord) -> tuple[Any, ...]:
    values: list[Any] = []
    for name in _COLUMNS:
        value = getattr(record, name)
        if name in ("fp", "simhash") and value is not None:
            value = _signed(value)
        elif name == "original" and value is not None:
            value = json.dumps([getattr(value, f.name) for f in fields(ArchiveRef)])
        elif name == "history":
            value = json.dumps([[t, int(c)] for t, c in value])
        elif isinstance(value, float) and math.isnan(value):
            value = None
        values.append(value)
    return tuple(values)


def _record(row: Sequence[Any]) -> UrlRecord:
    data = dict(zip(_COLUMNS, row))
    data["fp"] = _unsigned(data["fp"])
    if data["simhash"] is not None:
        data["simhash"] = _unsigned(data["simhash"])
    if data["original"] is not None:
        data["original"] = ArchiveRef(*json.loads(data["original"]))
    data["history"] = tuple((float(t), bool(c)) for t, c in json.loads(data["history"] or "[]"))
    for name in ("first_fetch_s", "last_fetch_s", "last_change_s"):
        if data[name] is None:
            data[name] = math.nan
    return UrlRecord(**data)


def state_path(out_dir: Path) -> Path:
    """Where a node directory keeps its re-crawl state."""
    return Path(out_dir) / "state" / STATE_NAME
