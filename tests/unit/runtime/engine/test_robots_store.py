"""webgather.runtime.engine.robots_store: every host's settled robots state on disk, by wall-clock expiry."""

from __future__ import annotations

from pathlib import Path

from webgather.runtime.engine.robots_store import COMMIT_EVERY, RobotsStore


def test_rows_are_fresh_until_they_expire_then_gone(tmp_path: Path) -> None:
    store = RobotsStore.open(tmp_path / "state")
    store.put("a.test", 100.0, b"A")
    store.put("b.test", 50.0, b"D")
    store.put("a.test", 120.0, b"D")  # replaced
    assert store.get("a.test", 10.0) == (120.0, b"D")
    assert store.get("b.test", 49.9) == (50.0, b"D")
    assert store.get("b.test", 50.0) is None
    assert store.get("never.test", 0.0) is None
    assert len(store) == 1  # the expired row was deleted when read
    store.close()
    store.close()


def test_rows_survive_a_close_and_a_reopen_and_uncommitted_ones_are_read(tmp_path: Path) -> None:
    store = RobotsStore.open(tmp_path / "state")
    for i in range(COMMIT_EVERY + 3):
        store.put(f"h{i}.test", 1000.0, b"A")
    assert store.get(f"h{COMMIT_EVERY + 2}.test", 0.0) == (1000.0, b"A")  # not committed yet, read back
    store.close()
    again = RobotsStore.open(tmp_path / "state")
    assert len(again) == COMMIT_EVERY + 3
    again.forget("h0.test")
    assert again.get("h0.test", 0.0) is None
    again.close()
