"""StateDB: the frontier's SQLite database (queue rows, hosts, seen journal, in-flight marks).

Why SQLite (stdlib ``sqlite3``) rather than hand-made segment files: one
transaction covers the queue rows, the in-flight marks and the seen-key journal,
so a crash between any two writes cannot leave them disagreeing; an index on
``(host_id, key, seq)`` keeps each host's queue in order, so loading the next
chunk of a host is one range read; and deletes reclaim space without a
compactor. Rows are appended in ``seq`` order (the rowid), which measured about
3 us a row in batches against 6 us for a table clustered by host.

Settings: WAL journal, ``synchronous=OFF`` (a commit is written to the OS at
once, so it survives ``kill -9``; it is not fsynced, so an OS crash or power
loss may lose the last commits), ``locking_mode=EXCLUSIVE`` (a second process
opening the same state gets a :class:`~webgather.errors.StoreError`). The
connection always has a transaction open; :meth:`StateDB.commit` ends it and
opens the next (a group commit). sqlite3 errors are translated here.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from webgather.errors import CorruptState, IncompatibleCrawl, StoreError, WriteFailed
from webgather.frontier.seen import KeyArray

__all__ = ["SCHEMA_VERSION", "StateDB", "signed64", "unsigned64"]

SCHEMA_VERSION = 1
_TWO_63 = 1 << 63
_TWO_64 = 1 << 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY, host TEXT NOT NULL UNIQUE, accepted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS queue (
    seq INTEGER PRIMARY KEY, host_id INTEGER NOT NULL, key REAL NOT NULL,
    url TEXT NOT NULL, fp INTEGER NOT NULL, depth INTEGER NOT NULL, redirects INTEGER NOT NULL,
    attempt INTEGER NOT NULL, priority REAL NOT NULL, kind TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS queue_order ON queue (host_id, key, seq);
CREATE TABLE IF NOT EXISTS seen_log (id INTEGER PRIMARY KEY, keys BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS cash (fp INTEGER PRIMARY KEY, cash REAL NOT NULL);
"""


def signed64(value: int) -> int:
    """An unsigned 64-bit value as SQLite's signed INTEGER."""
    return value - _TWO_64 if value >= _TWO_63 else value


def unsigned64(value: int) -> int:
    return value + _TWO_64 if value < 0 else value


class StateDB:
    """One SQLite connection with a transaction always open (see the module docstring)."""

    def __init__(self, path: Path, cache_bytes: int = 64 * 1024 * 1024) -> None:
        self.path = path
        self._journal: list[KeyArray] = []
        self._failed: StoreError | None = None
        try:
            self.conn = sqlite3.connect(path, isolation_level=None, timeout=0.2)
            self.conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            self.conn.execute("PRAGMA synchronous=OFF")
            self.conn.execute(f"PRAGMA cache_size=-{max(1, cache_bytes // 1024)}")
            self.conn.executescript(_SCHEMA)
            self.conn.execute("BEGIN")
        except sqlite3.OperationalError as exc:
            raise StoreError(f"cannot open frontier state {path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise CorruptState(f"frontier state {path} is not a usable database: {exc}") from exc
        if str(mode).lower() != "wal":
            raise StoreError(f"frontier state {path}: SQLite refused WAL mode ({mode})")

    # -- meta -----------------------------------------------------------------

    def meta(self, name: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: object) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, str(value)))

    def set_metas(self, values: dict[str, object]) -> None:
        """Several meta values in one statement."""
        marks = ", ".join(["(?, ?)"] * len(values))
        params = [part for name, value in values.items() for part in (name, str(value))]
        self.conn.execute(f"INSERT OR REPLACE INTO meta (name, value) VALUES {marks}", params)

    def check_settings(self, settings: dict[str, str]) -> bool:
        """Record ``settings`` in a new state, or check them against an existing one.

        Returns True if the state already existed.
        """
        version = self.meta("schema")
        if version is None:
            self.set_meta("schema", SCHEMA_VERSION)
            for name, value in settings.items():
                self.set_meta(name, value)
            self.commit()
            return False
        if version != str(SCHEMA_VERSION):
            raise CorruptState(f"frontier state {self.path} has schema {version}, expected {SCHEMA_VERSION}")
        for name, value in settings.items():
            stored = self.meta(name)
            if stored != value:
                raise IncompatibleCrawl(f"frontier state {self.path} was made with {name}={stored}, not {value}")
        return True

    # -- seen-key journal -----------------------------------------------------

    def journal_seen(self, keys: KeyArray) -> None:
        """Journal new seen keys; they are written (one record) with the next commit."""
        if len(keys):
            self._journal.append(keys)

    def seen_journal(self) -> Iterator[KeyArray]:
        for (blob,) in self.conn.execute("SELECT keys FROM seen_log ORDER BY id"):
            if len(blob) % 8:
                raise CorruptState(f"frontier state {self.path}: a seen journal record is {len(blob)} bytes")
            yield np.frombuffer(blob, dtype="<u8").astype(np.uint64)

    def clear_seen_journal(self) -> None:
        self._write_journal()
        self.conn.execute("DELETE FROM seen_log")

    def _write_journal(self) -> None:
        if self._journal:
            blob = np.concatenate(self._journal).astype("<u8").tobytes()
            self._journal.clear()
            self.conn.execute("INSERT INTO seen_log (keys) VALUES (?)", (blob,))

    # -- in-flight marks --------------------------------------------------------

    @staticmethod
    def in_flight_value(fps: Iterable[int]) -> str:
        """The meta value recording the fingerprints in flight at a checkpoint."""
        return ",".join(str(signed64(fp)) for fp in fps)

    def in_flight_marks(self) -> set[int]:
        """Signed fingerprints in flight at the last checkpoint."""
        value = self.meta("in_flight") or ""
        try:
            return {int(part) for part in value.split(",") if part}
        except ValueError as exc:
            raise CorruptState(f"frontier state {self.path}: bad in-flight marks") from exc

    # -- transactions -------------------------------------------------------------

    def commit(self) -> None:
        """End the open transaction (written to the OS) and open the next.

        After a failed commit (disk full) SQLite may have rolled back what the
        caller's memory counts as applied, so no later commit is made in this
        process: the failure is raised again, and the redo journal (whose
        generation only a committed checkpoint advances) keeps the changes for
        the resume to replay."""
        if self._failed is not None:
            raise self._failed
        try:
            self._write_journal()
            self.conn.execute("COMMIT")
            self.conn.execute("BEGIN")
        except sqlite3.Error as exc:
            self._failed = _sqlite_error(f"cannot commit frontier state {self.path}", exc)
            with contextlib.suppress(sqlite3.Error):  # stay in a transaction: nothing autocommits later
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                self.conn.execute("BEGIN")
            raise self._failed from exc

    def close(self) -> None:
        try:
            self._write_journal()
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.close()
        except sqlite3.Error as exc:
            raise _sqlite_error(f"cannot close frontier state {self.path}", exc) from exc


def _sqlite_error(what: str, exc: sqlite3.Error) -> StoreError:
    """SQLite's full disk or I/O error as :class:`WriteFailed` (the crawl stops), else :class:`StoreError`."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one
    if code == sqlite3.SQLITE_FULL:
        return WriteFailed(f"disk full: {what}: {exc} (SQLITE_FULL)")
    if code == sqlite3.SQLITE_IOERR:
        return WriteFailed(f"{what}: {exc} (SQLITE_IOERR)")
    return StoreError(f"{what}: {exc}")
