"""Opening, committing, checkpointing and resuming a persistent frontier.

Layout of ``state_dir``: ``frontier.db`` (SQLite: queue rows, hosts, seen-key
journal, meta; :mod:`webgather.frontier.store`), ``journal-<gen>.log`` (the
redo journal since the last checkpoint; :mod:`webgather.frontier.journal`) and
``seen/`` (the :class:`~webgather.frontier.seen_disk.DiskSeen` run files).

Write order, and why a crash between any two writes is safe:

1. ``add``, ``next_ready``, ``complete``... append ops to the journal's list and
   change the in-memory state (seen memory tier, heaps, pending rows).
2. ``complete``/``retry``/``flush`` write the list as one journal record (the
   group commit). A crash before that loses the adds together with the
   completion of the page they came from, which is then fetched again and
   yields them again.
3. A checkpoint (every ``checkpoint_interval_s`` of the caller's ``now``, or
   ``checkpoint_bytes`` of journal, or ``checkpoint_rows`` pending rows) writes
   the rows and the new seen keys to SQLite and commits, recording the next
   journal generation in the same transaction; only then is the new journal
   started and the old one deleted. Crash before the commit: the old journal is
   replayed over the previous checkpoint. Crash after it: the old journal is
   stale and deleted.
4. Right after a checkpoint, if the seen memory tier is full, it is written as a
   run file (atomic rename) and the seen-key journal table emptied in a second
   transaction. A crash between the two replays keys a run already has:
   adding them again changes nothing.

On open: the seen-key table and the journal's seen ops are replayed into the
memory tier, the journal's row ops into SQLite, then a checkpoint starts a new
generation. Items in flight at the last journal record are counted
(``resumed_in_flight``) and are queued again (their rows were never deleted).
Items taken after the last record count as queued, not resumed.
"""

from __future__ import annotations

import math
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

import numpy as np

from webgather.config import FrontierConfig, PolitenessConfig
from webgather.errors import StoreError
from webgather.frontier.cash import CashBook, load_cash
from webgather.frontier.journal import Journal, Op, read_journal, remove_stale
from webgather.frontier.queues_sqlite import SqliteQueues
from webgather.frontier.seen import KeyArray
from webgather.frontier.seen_disk import DiskSeen
from webgather.frontier.store import StateDB

__all__ = ["Persistence", "open_persistent"]

CHECKPOINT_INTERVAL_S = 10.0


class Resumable(Protocol):
    """What :func:`open_persistent` needs of the frontier it builds (a protocol, so that
    this module does not import :mod:`webgather.frontier.frontier`, which imports it)."""

    def restore_host(self, host: str, head: float) -> None: ...


F = TypeVar("F", bound=Resumable)
CHECKPOINT_BYTES = 64 * 1024 * 1024
CHECKPOINT_ROWS = 250_000
REPLAY_PENDING_ROWS = 100_000
"""Rows a journal replay holds in RAM before it writes them to SQLite (in the open transaction)."""


class Persistence:
    """The frontier's durable side: StateDB, journal, SqliteQueues and DiskSeen, in step."""

    def __init__(self, db: StateDB, queues: SqliteQueues, seen: DiskSeen, journal: Journal,
                 cash: CashBook | None = None) -> None:
        self.db = db
        self.cash = cash
        self.queues = queues
        self.seen = seen
        self.journal = journal
        self.checkpoint_interval_s = CHECKPOINT_INTERVAL_S
        self.checkpoint_bytes = CHECKPOINT_BYTES
        self.checkpoint_rows = CHECKPOINT_ROWS
        self.checkpoints = 0
        self._last_checkpoint_at = -math.inf

    def journal_seen(self, keys: KeyArray) -> None:
        self.db.journal_seen(keys)
        self.journal.ops.append(("seen", keys.astype("<u8").tobytes()))

    def accepted_of(self, host: str) -> int:
        return self.queues.accepted(host)

    def accepted(self, host: str, count: int) -> None:
        self.queues.set_accepted(host, count)

    def commit(self, now: float) -> None:
        """Group commit (one journal record); a checkpoint when one is due."""
        self.journal.write()
        if self._last_checkpoint_at == -math.inf:
            self._last_checkpoint_at = now
        if (now - self._last_checkpoint_at >= self.checkpoint_interval_s
                or self.journal.bytes_written >= self.checkpoint_bytes
                or self.queues.pending_rows >= self.checkpoint_rows):
            self.checkpoint(now)

    def checkpoint(self, now: float) -> None:
        """Everything into SQLite, a new journal generation; spill the seen tier if full."""
        self.journal.write()
        gen = self.journal.gen + 1
        if self.cash is not None:
            self.cash.write(self.db)
        self.queues.checkpoint({"journal_gen": gen})
        self.journal.rotate(gen)
        self.checkpoints += 1
        self._last_checkpoint_at = now
        if self.seen.memory_len >= self.seen.memory_entries:
            self._spill()

    def spill(self, now: float) -> None:
        """Checkpoint, then write the whole seen memory tier to a run."""
        self.checkpoint(now)
        self._spill()

    def _spill(self) -> None:
        self.seen.flush()
        self.db.clear_seen_journal()
        self.db.commit()

    def close(self, now: float) -> None:
        self.spill(now)
        self.seen.close()
        self.journal.close()
        self.db.close()


def open_persistent(cls: Callable[..., F], state_dir: Path, config: FrontierConfig,
                    politeness: PolitenessConfig, n_buckets: int,
                    max_pages_per_host: int | None) -> F:
    """Create or resume the frontier state under ``state_dir``."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create frontier state directory {state_dir}: {exc}") from exc
    db = StateDB(state_dir / "frontier.db")
    try:
        db.check_settings({"n_buckets": str(n_buckets), "order": config.order})
        seen = DiskSeen(state_dir / "seen", config.seen_memory_entries, auto_flush=False)
        for keys in db.seen_journal():
            seen.add_many(keys)
        queues = SqliteQueues(db, by_depth=config.order == "bfs", host_queue_memory=config.host_queue_memory,
                              queue_memory_items=config.queue_memory_items)
        gen = int(db.meta("journal_gen") or 0)
        in_flight = db.in_flight_marks()
        for blob in queues.replay(_bounded(read_journal(state_dir, gen), queues), in_flight):
            keys = np.frombuffer(blob, dtype="<u8").astype(np.uint64)
            db.journal_seen(keys[seen.add_many(keys)])
        cash = _open_cash(db, queues) if config.order == "opic" else None
        queues.checkpoint({"journal_gen": gen + 1, "in_flight": ""})
        remove_stale(state_dir, keep=gen + 1)
        queues.journal = journal = Journal(state_dir, gen + 1)
        if cash is not None:
            cash.journal = journal
        frontier = cls(config, politeness, n_buckets, max_pages_per_host, seen, queues,
                       Persistence(db, queues, seen, journal, cash), cash,
                       queued=queues.rows, resumed_in_flight=len(in_flight))
        for host, head in queues.restore():
            frontier.restore_host(host, head)
    except BaseException:
        db.conn.close()
        raise
    return frontier


def _bounded(records: Iterator[list[Op]], queues: SqliteQueues) -> Iterator[list[Op]]:
    """The records, with the replayed rows written to SQLite whenever ``REPLAY_PENDING_ROWS``
    wait: a crash's journal (up to ``CHECKPOINT_BYTES``) is not held in RAM as rows. The
    writes join the open transaction, so a crash during the replay leaves the state as it was."""
    for ops in records:
        yield ops
        if queues.pending_rows >= REPLAY_PENDING_ROWS:
            queues.write_rows()


def _open_cash(db: StateDB, queues: SqliteQueues) -> CashBook:
    """OPIC: the cash book from the rows, the cash table and the replayed journal, written
    back in the open checkpoint's transaction."""
    queues.write_rows()
    cash = load_cash(db, queues.replayed_cash)
    cash.write(db)
    queues.cash = cash
    return cash
