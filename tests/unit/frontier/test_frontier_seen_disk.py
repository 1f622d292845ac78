"""DiskSeen internals: run merges, crash left-overs, bounded memory tier; MemorySeen against a set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.errors import CorruptState
from webgather.frontier.seen import SMALL_BATCH, Directory, MemorySeen, bucket_range, unique_first
from webgather.frontier.seen_disk import DiskSeen, _merge


def keys(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 300), max_size=30), max_size=25), st.integers(1, 4), st.integers(2, 4))
def test_memory_seen_matches_a_python_set(batches: list[list[int]], base: int, growth: int) -> None:
    s = MemorySeen(base_entries=base, growth=growth)
    truth: set[int] = set()
    for batch in batches:
        expected = []
        for k in batch:
            expected.append(k not in truth)
            truth.add(k)
        assert s.add_many(keys(batch)).tolist() == expected
    assert len(s) == len(truth)
    assert s.sorted_keys().tolist() == sorted(truth)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1) | st.integers(0, 6), max_size=2 * SMALL_BATCH + 2))
def test_unique_first_is_np_unique_with_first_indices(values: list[int]) -> None:
    """Small batches take the Python path, larger ones numpy: both give np.unique's answer."""
    batch = keys(values)
    want_keys, want_first = np.unique(batch, return_index=True)
    got_keys, got_first = unique_first(batch)
    assert got_keys.dtype == np.uint64 and got_keys.tolist() == want_keys.tolist()
    assert got_first.tolist() == want_first.tolist()


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 10_000), max_size=200), st.data(), st.integers(1, 7))
def test_chunked_merge_of_two_runs_is_the_sorted_union(values: set[int], data: st.DataObject, chunk: int) -> None:
    ordered = sorted(values)
    left = set(data.draw(st.sets(st.sampled_from(ordered))) if ordered else set())
    a = keys(sorted(left))
    b = keys([v for v in ordered if v not in left])
    pieces = list(_merge(a, b, chunk))
    assert all(len(p) <= 2 * chunk for p in pieces)
    merged = np.concatenate(pieces).tolist() if pieces else []
    assert merged == ordered


def test_the_memory_tier_stays_bounded_and_runs_stay_few(tmp_path: Path) -> None:
    s = DiskSeen(tmp_path, memory_entries=100, merge_chunk_entries=16)
    rng = np.random.default_rng(5)
    truth: set[int] = set()
    for _ in range(60):
        batch = rng.integers(0, 2**64, size=37, dtype=np.uint64)
        s.add_many(batch)
        truth.update(batch.tolist())
        assert s.memory_len < 100
    assert len(s) == len(truth)
    assert s.runs <= 6
    assert s.contains_many(keys(sorted(truth))).all()
    s.close()
    again = DiskSeen(tmp_path, memory_entries=100)
    assert len(again) == len(truth) and again.memory_len == 0
    again.close()


def test_left_overs_of_an_interrupted_merge_are_cleaned_on_open(tmp_path: Path) -> None:
    s = DiskSeen(tmp_path, memory_entries=10_000)
    s.add_many(keys([1, 2, 3]))
    s.flush()
    s.add_many(keys([4, 5]))
    s.flush()  # merged into run 1..2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-0000000001-0000000002.npy"]
    np.save(tmp_path / "run-0000000001-0000000001.npy", keys([1, 2, 3]))  # an input whose delete was lost
    (tmp_path / "run-0000000003-0000000003.tmp").write_bytes(b"half a file")
    again = DiskSeen(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-0000000001-0000000002.npy"]
    assert len(again) == 5
    assert again.add_many(keys([3, 6])).tolist() == [False, True]
    again.close()


def test_drop_bucket_rewrites_runs_durably(tmp_path: Path) -> None:
    lo, hi = bucket_range(7)
    inside = [lo, lo + 5, hi - 1]
    outside = [lo - 1, hi, 3]
    s = DiskSeen(tmp_path, memory_entries=2)
    s.add_many(keys(inside + outside))
    s.add_many(keys([hi + 10]))
    assert s.drop_bucket(7) == 3
    assert s.export_bucket(7).tolist() == []
    s.close()
    again = DiskSeen(tmp_path)
    assert len(again) == 4
    assert again.contains_many(keys(inside + outside)).tolist() == [False] * 3 + [True] * 3
    again.close()


def test_a_run_of_the_wrong_type_is_corrupt_state(tmp_path: Path) -> None:
    np.save(tmp_path / "run-0000000001-0000000001.npy", np.arange(4, dtype=np.int32))
    with pytest.raises(CorruptState):
        DiskSeen(tmp_path)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300, unique=True),
       st.lists(st.integers(0, 2**64 - 1), max_size=200), st.booleans())
def test_prefix_directory_agrees_with_searchsorted(stored: list[int], probes: list[int], clustered: bool) -> None:
    if clustered:  # many keys under one prefix, as one big host's URLs are
        stored = sorted({(7 << 52) | (v & 0xFFFF) for v in stored} | {0, 2**64 - 1})
    level = keys(sorted(stored))
    queries = keys(sorted(probes + stored[::3]))
    expected = [q in set(stored) for q in queries.tolist()]
    assert Directory(level, chunk=7).member(queries).tolist() == expected


def test_large_batches_use_the_directory_and_stay_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import webgather.frontier.seen as seen_module
    import webgather.frontier.seen_disk as disk_module

    for module in (seen_module, disk_module):
        monkeypatch.setattr(module, "DIRECTORY_MIN_KEYS", 64)
        monkeypatch.setattr(module, "DIRECTORY_MIN_BATCH", 8)
    rng = np.random.default_rng(11)
    stored = rng.integers(0, 2**64, size=3000, dtype=np.uint64)
    for s in (MemorySeen(base_entries=100), DiskSeen(tmp_path, memory_entries=500)):
        for i in range(0, 3000, 250):
            s.add_many(stored[i : i + 250])
        probe = np.concatenate((stored[::7], rng.integers(0, 2**64, size=500, dtype=np.uint64)))
        found = s.contains_many(probe)
        assert found[: len(stored[::7])].all() and not found[len(stored[::7]) :].any()
        assert not s.add_many(stored[:300]).any()
