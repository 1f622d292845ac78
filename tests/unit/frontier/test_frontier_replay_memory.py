"""A resume after a crash replays the journal in bounded RAM: a record at a time, rows written as they pile up."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier import persist
from webgather.frontier.frontier import Frontier
from webgather.frontier.journal import Journal, read_journal
from webgather.frontier.model import CrawlItem
from webgather.frontier.queues_sqlite import SqliteQueues
from webgather.urls import fingerprint

FAST = PolitenessConfig(min_delay_s=0.0, per_ip_connections=1000)
SMALL = FrontierConfig(host_queue_memory=3, queue_memory_items=10, seen_memory_entries=7)


def test_read_journal_holds_one_record_not_the_file(tmp_path: Path) -> None:
    journal = Journal(tmp_path, 1)
    for r in range(80):  # 80 records of ~100 KB: an 8 MB journal
        journal.ops.append(("remove", f"h{r}.test", [(float(r), k) for k in range(5000)]))
        journal.write()
    journal.close()
    tracemalloc.start()
    try:
        records = sum(1 for _ in read_journal(tmp_path, 1))
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert records == 80
    assert peak_bytes < 2 * 1024 * 1024, f"reading the journal took {peak_bytes} bytes at peak"


def test_replay_writes_rows_to_sqlite_as_they_pile_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    for batch in range(10):  # 10 journal records of 30 new rows, never checkpointed
        urls = [f"http://h{k % 7}.test/{batch}/{k}" for k in range(30)]
        f.add([CrawlItem(u, fingerprint(u)) for u in urls], 0.0)
        assert f.persist is not None
        f.persist.commit(0.0)
    assert f.persist is not None and f.persist.checkpoints == 0
    f.persist.db.conn.close()  # a crash: the journal is all that holds the rows
    f.persist.journal.close()
    monkeypatch.setattr(persist, "REPLAY_PENDING_ROWS", 50)
    most = 0
    replay_op = SqliteQueues._replay_op

    def spy(self: SqliteQueues, op: tuple[object, ...], in_flight: set[int]) -> None:
        nonlocal most
        replay_op(self, op, in_flight)
        most = max(most, self.pending_rows)

    monkeypatch.setattr(SqliteQueues, "_replay_op", spy)
    g = Frontier.open(tmp_path, SMALL, FAST, n_buckets=16)
    assert most <= 50 + 30, f"replay held {most} rows in RAM"
    assert g.pending() == 300 and g.stats()["seen"] == 300
    got = set()
    while (it := g.next_ready(0.0)[0]) is not None:
        got.add(it.url)
        g.complete(it, 0.0)
    assert len(got) == 300
    g.close()
