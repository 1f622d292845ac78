"""The SeenSet contract, run over every backend (memory, cached, disk)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from webgather.cachepolicy import ClockCache, LruCache
from webgather.frontier.seen import (
    CachedSeen,
    MemorySeen,
    SeenSet,
    bucket_range,
    seen_key,
    seen_keys,
)
from webgather.frontier.seen_disk import DiskSeen

Factory = Callable[[], SeenSet]


@pytest.fixture(params=["memory", "memory-small-levels", "cached-lru", "cached-clock", "disk", "disk-tiny-tier"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Factory]]:
    """A factory: for the disk backends it reopens the same directory each call."""
    kind = request.param
    opened: list[DiskSeen] = []

    def make() -> SeenSet:
        if kind == "memory":
            return MemorySeen()
        if kind == "memory-small-levels":
            return MemorySeen(base_entries=3, growth=2)
        if kind == "cached-lru":
            return CachedSeen(MemorySeen(base_entries=8), LruCache(16))
        if kind == "cached-clock":
            return CachedSeen(MemorySeen(base_entries=8), ClockCache(16))
        for d in opened:
            d.close()
        tier = 5 if kind == "disk-tiny-tier" else 1000
        disk = DiskSeen(tmp_path / "seen", memory_entries=tier, merge_chunk_entries=4)
        opened.append(disk)
        return disk

    yield kind, make
    for d in opened:
        d.close()


def keys(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def test_add_many_marks_only_first_occurrences_as_new(backend: tuple[str, Factory]) -> None:
    s = backend[1]()
    assert s.add_many(keys([5, 3, 5, 9, 3])).tolist() == [True, True, False, True, False]
    assert s.add_many(keys([9, 1, 1])).tolist() == [False, True, False]
    assert len(s) == 4


def test_contains_many_does_not_change_the_set(backend: tuple[str, Factory]) -> None:
    s = backend[1]()
    s.add_many(keys([10, 20]))
    assert s.contains_many(keys([20, 30, 10])).tolist() == [True, False, True]
    assert s.add_many(keys([30])).tolist() == [True]


def test_empty_batches_and_the_extremes_of_the_key_space(backend: tuple[str, Factory]) -> None:
    s = backend[1]()
    assert s.add_many(keys([])).tolist() == []
    top = 2**64 - 1
    assert s.add_many(keys([0, top])).tolist() == [True, True]
    assert s.contains_many(keys([top, 0, 1])).tolist() == [True, True, False]


def test_exact_against_a_python_set_over_many_batches(backend: tuple[str, Factory]) -> None:
    s = backend[1]()
    rng = np.random.default_rng(7)
    truth: set[int] = set()
    for _ in range(60):
        batch = rng.integers(0, 400, size=int(rng.integers(0, 40)), dtype=np.uint64)
        expected = []
        for k in batch.tolist():
            expected.append(k not in truth)
            truth.add(k)
        assert s.add_many(batch).tolist() == expected
    assert len(s) == len(truth)
    probe = np.arange(0, 450, dtype=np.uint64)
    assert s.contains_many(probe).tolist() == [k in truth for k in range(450)]


def test_buckets_are_contiguous_ranges_that_export_and_drop(backend: tuple[str, Factory]) -> None:
    s = backend[1]()
    fps = np.arange(1, 31, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    buckets = np.array([i % 3 for i in range(30)], dtype=np.uint64)
    ks = seen_keys(buckets, fps)
    s.add_many(ks)
    assert int(ks[4]) == seen_key(1, int(fps[4]))
    exported = s.export_bucket(1)
    lo, hi = bucket_range(1)
    assert exported.tolist() == sorted(k for k in ks.tolist() if lo <= k < hi)
    assert s.drop_bucket(1) == 10
    assert len(s) == 20
    assert s.contains_many(ks).tolist() == [b != 1 for b in buckets.tolist()]
    assert s.add_many(ks).tolist() == [b == 1 for b in buckets.tolist()]
    assert s.drop_bucket(4000) == 0


def test_bucket_edges_including_the_top_bucket(backend: tuple[str, Factory]) -> None:
    s = backend[1]()
    lo7, hi7 = bucket_range(7)
    lo_top, _ = bucket_range(4095)
    edge = [lo7 - 1, lo7, lo7 + 1, hi7 - 1, hi7, lo_top - 1, lo_top, 2**64 - 1]
    s.add_many(keys(edge))
    s.flush()
    assert s.export_bucket(7).tolist() == [lo7, lo7 + 1, hi7 - 1]
    assert s.export_bucket(4095).tolist() == [lo_top, 2**64 - 1]
    assert s.drop_bucket(4095) == 2 and s.drop_bucket(7) == 3
    assert s.contains_many(keys(edge)).tolist() == [True, False, False, False, True, True, False, False]


def test_flush_then_reopen_keeps_everything_on_disk_backends(backend: tuple[str, Factory]) -> None:
    kind, make = backend
    s = make()
    s.add_many(keys(list(range(0, 200, 3))))
    s.flush()
    again = make()
    expected = len(range(0, 200, 3)) if kind.startswith("disk") else 0
    assert len(again) == expected
    if kind.startswith("disk"):
        assert again.add_many(keys([0, 1, 3])).tolist() == [False, True, False]


def test_seen_keys_checks_its_inputs() -> None:
    with pytest.raises(ValueError):
        seen_keys(np.array([4096], dtype=np.uint64), np.array([1], dtype=np.uint64))
    with pytest.raises(ValueError):
        seen_keys(np.array([1, 2]), np.array([1]))
    with pytest.raises(ValueError):
        seen_key(-1, 5)
    assert seen_key(4095, 2**64 - 1) == 2**64 - 1


def test_cached_seen_answers_repeats_from_the_cache() -> None:
    inner = MemorySeen()
    s = CachedSeen(inner, LruCache(100))
    s.add_many(keys([1, 2, 3]))
    s.add_many(keys([1, 2, 4]))
    assert (s.hits, s.lookups) == (2, 6)
    s.drop_bucket(0)  # keys 1..4 are all in bucket 0: cache hits must be re-checked now
    assert s.add_many(keys([1, 2])).tolist() == [True, True]
