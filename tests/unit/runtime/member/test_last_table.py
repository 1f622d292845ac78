"""A restarted node awaits the buckets it was given while it was away (its last adopted table is kept)."""

from __future__ import annotations

from pathlib import Path

from webgather.cluster.handoff import Awaiting, Ownership
from webgather.cluster.mapping import BucketTable
from webgather.runtime.member.last_table import load_table, save_table, table_path

M = 8


def _table(version: int, owners: str) -> BucketTable:
    return BucketTable(version, M, tuple(f"n{o}" for o in owners))


def test_buckets_gained_while_away_are_awaited_from_their_owner_in_the_last_table() -> None:
    """n2 was killed and restarted before anyone noticed; meanwhile n0 died and its buckets 0-2 went to
    n2 (nemesis s3 seed 1146). Buckets 6-7, n2's before, stay ready: its own store holds them."""
    stored, now = _table(3, "00011122"), _table(4, "22211122")
    own = Ownership("n2")
    own.adopt(now, 10.0)
    assert own.resumed(stored, 10.0) == [0, 1, 2]
    assert own.ready == {6, 7}
    assert own.awaiting == {b: Awaiting("n0", 10.0) for b in (0, 1, 2)}


def test_no_newer_table_or_another_bucket_count_changes_nothing() -> None:
    for stored in (_table(4, "00011122"), BucketTable(3, 4, ("n0",) * 4)):
        own = Ownership("n2")
        own.adopt(_table(4, "22211122"), 0.0)
        assert own.resumed(stored, 0.0) == [] and own.ready == {0, 1, 2, 6, 7}


def test_the_table_is_kept_and_read_back_and_a_bad_file_is_no_table(tmp_path: Path) -> None:
    path = table_path(tmp_path)
    assert load_table(path) is None
    save_table(path, _table(5, "01201201"))
    assert load_table(path) == _table(5, "01201201")
    path.write_text("{not json")
    assert load_table(path) is None
