"""Every host's settled robots state on the node's disk: ``DIR/state/robots.sqlite``.

The robots gate keeps at most ``robots.max_hosts`` hosts in memory; this store
keeps all of them, in the compact form of :mod:`webgather.robots.compact`
(a few bytes for a host without robots.txt), with the wall-clock time the
state expires. The driver puts a row whenever the gate settles a host and reads
it back when the gate has evicted the host, or after a restart: a crawl that is
resumed reuses the rules that are still fresh instead of asking every host again.

Rows are committed every :data:`COMMIT_EVERY` puts and when the store is
closed; reads see uncommitted rows (one connection). A crash loses at most the
last uncommitted rows: those hosts' robots.txt is fetched again, nothing else.
Expired rows are deleted when read. sqlite3 errors become
:class:`~webgather.errors.StoreError` (:class:`~webgather.errors.WriteFailed`
for a write).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from webgather.errors import StoreError, WriteFailed

__all__ = ["COMMIT_EVERY", "RobotsStore"]

COMMIT_EVERY = 256
_SCHEMA = "CREATE TABLE IF NOT EXISTS robots (host TEXT PRIMARY KEY, expires_s REAL NOT NULL, state BLOB NOT NULL)"


class RobotsStore:
    """Settled robots state by host, with its wall-clock expiry (see the module docstring)."""

    def __init__(self, db: sqlite3.Connection, path: str) -> None:
        """Prefer :meth:`open`."""
        self._db = db
        self._path = path
        self._uncommitted = 0
        self._closed = False

    @classmethod
    def open(cls, state_dir: Path) -> RobotsStore:
        """The store under ``state_dir`` (created if missing; an existing one is reused)."""
        path = state_dir / "robots.sqlite"
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            db.execute(_SCHEMA)
            db.execute("BEGIN")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open {path}: {exc}") from exc
        return cls(db, str(path))

    def put(self, host: str, expires_s: float, state: bytes) -> None:
        """Keep ``state`` of ``host`` until ``expires_s`` (wall clock), replacing what was kept."""
        try:
            self._db.execute("INSERT OR REPLACE INTO robots (host, expires_s, state) VALUES (?, ?, ?)",
                             (host, expires_s, state))
        except sqlite3.Error as exc:
            raise WriteFailed(f"cannot write {self._path}: {exc}") from exc
        self._uncommitted += 1
        if self._uncommitted >= COMMIT_EVERY:
            self.commit()

    def get(self, host: str, now_s: float) -> tuple[float, bytes] | None:
        """``(expires_s, state)`` of ``host`` if it is still fresh at ``now_s`` (wall clock)."""
        try:
            row = self._db.execute("SELECT expires_s, state FROM robots WHERE host = ?", (host,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self._path}: {exc}") from exc
        if row is None:
            return None
        if row[0] <= now_s:
            self.forget(host)
            return None
        return float(row[0]), bytes(row[1])

    def forget(self, host: str) -> None:
        try:
            self._db.execute("DELETE FROM robots WHERE host = ?", (host,))
        except sqlite3.Error as exc:
            raise WriteFailed(f"cannot write {self._path}: {exc}") from exc

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM robots").fetchone()[0])

    def commit(self) -> None:
        try:
            self._db.execute("COMMIT")
            self._db.execute("BEGIN")
        except sqlite3.Error as exc:
            raise WriteFailed(f"cannot write {self._path}: {exc}") from exc
        self._uncommitted = 0

    def close(self) -> None:
        """Commit and close (a second call does nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise WriteFailed(f"cannot write {self._path}: {exc}") from exc
        finally:
            self._db.close()
