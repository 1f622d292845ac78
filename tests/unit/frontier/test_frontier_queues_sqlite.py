"""SqliteQueues: RAM stays within its budget whatever the order of depths, and order survives."""

from __future__ import annotations

import random
from pathlib import Path

from webgather.errors import FrontierError
from webgather.frontier.model import CrawlItem
from webgather.frontier.queues_sqlite import SqliteQueues
from webgather.frontier.store import StateDB
from webgather.urls import fingerprint


def test_ram_budget_holds_even_when_lower_depths_keep_arriving(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "q.db")
    q = SqliteQueues(db, host_queue_memory=40, queue_memory_items=200)
    rng = random.Random(4)
    expected: dict[str, list[tuple[int, int, str]]] = {}
    seq = 0
    peak = 0
    for step in range(300):
        host = f"h{rng.randrange(30)}.test"
        batch = []
        for _ in range(8):
            seq += 1
            depth = max(0, 12 - step // 25) + rng.randrange(3)  # depths fall as the crawl goes on
            url = f"http://{host}/{seq}"
            batch.append(CrawlItem(url, fingerprint(url), depth=depth))
            expected.setdefault(host, []).append((depth, seq, url))
        q.push(host, batch)
        peak = max(peak, q.in_memory)
    assert peak <= 200 + 200 // 8 + 8
    for host, entries in expected.items():
        got = []
        while True:
            try:
                item, _ = q.pop(host)
            except FrontierError:
                break
            got.append(item.url)
            q.finish(host, item, False)
            peak = max(peak, q.in_memory)
        assert got == [e[2] for e in sorted(entries)]
    assert peak <= 200 + 200 // 8 + 8
    q.commit()
    db.close()
