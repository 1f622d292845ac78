"""Faults around table changes and restarts, over node processes with separate --out directories and a
file:// shared store: a node lost right after a join changed the table, and a rolling restart. Each
ends with every closure URL archived, no false DATA LOST, and no wait on a node that is gone."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from recovery_helpers import cluster

HANDOFF_TIMEOUT_S = 60.0


@pytest.mark.slow
async def test_coordinator_killed_with_its_disk_right_after_a_join_loses_nothing_and_waits_for_nothing(
        tmp_path: Path) -> None:
    """a (the first node: it holds the coordinator lease), b and c crawl; d joins, and the moment the
    table that gives d its share is stored, a is killed -9 and its --out deleted, before it could hand
    d anything. d's buckets from a must come from a's checkpoints and the streams, not start empty
    after ``handoff_timeout_s``; nothing is lost and nobody says DATA LOST."""
    async with cluster(tmp_path, checkpoint_s=0.5, handoff_timeout_s=HANDOFF_TIMEOUT_S) as (c, results):
        for node in "abc":
            await c.start(node)
        await c.wait_pages("a", 15, 60.0)
        await asyncio.sleep(1.0)  # a few checkpoints of a: its buckets have content in the store
        before = await c.table()
        assert before is not None and "d" not in before.nodes
        await c.start("d")

        async def joined(backend: object) -> bool:
            table = await backend.coordinator().get_table()  # type: ignore[attr-defined]
            return table is not None and "d" in table.nodes

        await c.wait_for(joined, 30.0, every_s=0.005)
        await c.kill("a", disk=False)
        killed = time.time() - c.started
        await c.wait_all(2 * HANDOFF_TIMEOUT_S)
    result = results[0]
    print(result.row(), result.counters)
    assert result.missing == [], result.row()
    assert result.closure > 100
    assert result.counters.get("buckets_started_empty", 0) == 0, result.counters
    assert result.counters.get("unrecoverable_buckets", 0) == 0, result.counters
    assert result.lost_lines() == []
    assert {k: v for k, v in result.exit_codes.items() if k != "a"} == {"b": 0, "c": 0, "d": 0}, result.row()
    assert result.ended_s - killed < HANDOFF_TIMEOUT_S / 2, result.row()
