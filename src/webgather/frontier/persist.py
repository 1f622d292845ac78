"""Opening, committing and resuming a persistent frontier (``Frontier.open(state_dir, ...)``).

Layout of ``state_dir``: ``frontier.db`` (SQLite: queue rows, hosts, the seen
journal, in-flight marks; :mod:`webgather.frontier.store`) and ``seen/`` (the
:class:`~webgather.frontier.seen_disk.DiskSeen` run files).

Write order, and why a crash between any two writes is safe:

1. ``add`` puts queue rows and a journal record of the new seen keys in the
   open transaction (one transaction: both or neither survive).
2. ``complete``/``retry``/``flush`` commit it. A crash before that loses the
   adds together with the completion of the page they came from, which is
   then fetched again and yields them again.
3. Only after a commit, when the seen memory tier is full, the tier is written
   as a run file (atomic rename), and then the journal is emptied in a second
   transaction. A crash between the two replays journal keys that a run
   already has: adding them again changes nothing.
4. On open the journal is replayed into the memory tier, the in-flight marks
   are counted (``resumed_in_flight``) and cleared (their rows are still
   queued), and hosts with rows get their queue heads back lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from webgather.config import FrontierConfig, PolitenessConfig
from webgather.errors import StoreError
from webgather.frontier.queues_sqlite import SqliteQueues
from webgather.frontier.seen_disk import DiskSeen
from webgather.frontier.seen import KeyArray
from webgather.frontier.store import StateDB

if TYPE_CHECKING:
    from webgather.frontier.frontier import Frontier

__all__ = ["Persistence", "open_persistent"]


class Persistence:
    """The frontier's durable side: one StateDB, the SqliteQueues on it, the DiskSeen."""

    def __init__(self, db: StateDB, queues: SqliteQueues, seen: DiskSeen) -> None:
        self.db = db
        self.queues = queues
        self.seen = seen

    def journal_seen(self, keys: KeyArray) -> None:
        self.db.journal_seen(keys)

    def accepted_of(self, host: str) -> int:
        return self.queues.accepted(host)

    def accepted(self, host: str, count: int) -> None:
        self.queues.set_accepted(host, count)

    def commit(self) -> None:
        """Group commit; then spill the seen memory tier if it is full (step 3)."""
        self.queues.commit()
        if self.seen.memory_len >= self.seen.memory_entries:
            self.spill()

    def spill(self) -> None:
        """Write the seen memory tier to a run and empty the journal (after a commit)."""
        self.queues.commit()
        self.seen.flush()
        self.db.clear_seen_journal()
        self.db.commit()

    def close(self) -> None:
        self.queues.commit()
        self.seen.close()
        self.db.clear_seen_journal()
        self.db.close()


def open_persistent(cls: type[Frontier], state_dir: Path, config: FrontierConfig,
                    politeness: PolitenessConfig, n_buckets: int,
                    max_pages_per_host: int | None) -> Frontier:
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
        resumed = db.take_resumed()
        queues = SqliteQueues(db, by_depth=config.order == "bfs", host_queue_memory=config.host_queue_memory,
                              queue_memory_items=config.queue_memory_items)
        frontier = cls(config, politeness, n_buckets, max_pages_per_host, seen, queues,
                       Persistence(db, queues, seen))
        for host, queued, head in queues.restore():
            frontier.restore_host(host, queued, head)
    except BaseException:
        db.conn.close()
        raise
    frontier.resumed_in_flight = resumed
    db.commit()
    return frontier
