"""Cache policies on known sequences; the fast all-sizes paths agree with the classes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from webgather.cachepolicy import ClockCache, LruCache, RandomCache, StaticCache
from webgather.errors import ConfigError
from webgather.sim import cache

# The textbook sequence (Belady's anomaly): OPT has 7 faults with 3 frames, 6 with 4;
# LRU 10 and 8.
CLASSIC = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5]


def _ids(seq: list[int]) -> np.ndarray:
    return cache.dense_ids(np.array(seq, dtype=np.uint64))[0]


def test_belady_on_the_textbook_sequence() -> None:
    ids = _ids(CLASSIC)
    assert cache.belady_hits(ids, 3) == 12 - 7
    assert cache.belady_hits(ids, 4) == 12 - 6
    # one slot: keeping key 1 and declining 2, 3, 4 (a bypass) hits it twice
    assert cache.belady_hits(ids, 1) == 2
    assert cache.belady_hits(ids, 5) == 12 - 5  # only compulsory misses


def test_lru_on_the_textbook_sequence() -> None:
    assert list(cache.lru_hits(_ids(CLASSIC), [3, 4, 5])) == [2, 4, 7]


def test_stack_distances_by_hand() -> None:
    ids = _ids([10, 20, 30, 10, 20, 20])
    assert list(cache.stack_distances(ids)) == [6, 6, 6, 2, 2, 0]


def test_next_and_previous_use() -> None:
    ids = _ids([5, 6, 5, 5])
    assert list(cache.next_use(ids)) == [2, 4, 3, 4]
    assert list(cache.prev_use(ids)) == [-1, -1, 0, 2]


def test_clock_differs_from_lru_where_the_reference_bit_saves_a_key() -> None:
    seq = [1, 2, 2, 1, 3, 2]  # LRU evicts 2 for 3; CLOCK's hand clears both bits and evicts 1
    ids = _ids(seq)
    assert cache.replay_hits("clock", ids, 2) == 3
    assert list(cache.lru_hits(ids, [2])) == [2]


def test_random_static_infinite_by_hand() -> None:
    ids = _ids([1, 1, 2, 2, 1])
    assert cache.replay_hits("random", ids, 1, seed=3) == 2  # one slot: always the victim
    assert list(cache.static_hits(_ids([1, 1, 1, 2, 2, 3]), [1, 2, 3, 9])) == [3, 5, 6, 6]
    result = cache.run(np.array([1, 1, 2, 2, 1], dtype=np.uint64), [1, 2], ["infinite"])
    assert [r.hits for r in result.rows] == [3, 3]


def test_fast_paths_agree_with_the_policy_classes() -> None:
    rng = np.random.default_rng(5)
    seq = (rng.zipf(1.4, 3000) % 300).astype(np.uint64)
    ids = cache.dense_ids(seq)[0]
    keys = ids.tolist()
    for size in (1, 7, 32, 100):
        lru = LruCache(size)
        assert int(cache.lru_hits(ids, [size])[0]) == sum(map(lru.access, keys))
        clock = ClockCache(size)
        assert cache.replay_hits("clock", ids, size) == sum(map(clock.access, keys))
        rand = RandomCache(size, random.Random(9))
        assert cache.replay_hits("random", ids, size, seed=9) == sum(map(rand.access, keys))
        top = np.argsort(-np.bincount(ids), kind="stable")[:size].tolist()
        static = StaticCache(size, top)
        assert int(cache.static_hits(ids, [size])[0]) == sum(map(static.access, keys))
        opt = cache.belady_hits(ids, size)
        assert opt >= int(cache.lru_hits(ids, [size])[0])
        assert opt <= len(keys) - int(ids.max()) - 1


def test_belady_matches_brute_force_on_random_sequences() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        seq = rng.integers(0, 8, 60).tolist()
        ids = _ids(seq)
        for size in (1, 2, 3, 5):
            assert cache.belady_hits(ids, size) == _brute_belady(ids.tolist(), size)


def _brute_belady(seq: list[int], size: int) -> int:
    held: set[int] = set()
    hits = 0
    for i, key in enumerate(seq):
        if key in held:
            hits += 1
            continue
        if len(held) < size:
            held.add(key)
            continue

        def next_at(k: int) -> int:
            return seq.index(k, i + 1) if k in seq[i + 1:] else 10**9

        victim = max([*held, key], key=next_at)
        if victim != key:
            held.discard(victim)
            held.add(key)
    return hits


def test_knee_of_a_bent_curve() -> None:
    sizes = [2**k for k in range(10)]
    rates = [0.1, 0.3, 0.5, 0.7, 0.8, 0.82, 0.83, 0.84, 0.845, 0.85]
    assert sizes[cache.knee(sizes, rates)] == 16
    assert sizes[cache.critical_point(sizes, rates)] == 16  # one bend: both agree


def test_critical_point_of_a_two_bend_curve() -> None:
    sizes = [2**k for k in range(12)]
    # a shoulder at 4 (local duplicates), a plateau, the steepest rise 128 -> 256, then flat
    rates = [0.1, 0.3, 0.45, 0.47, 0.48, 0.49, 0.5, 0.6, 0.85, 0.9, 0.91, 0.915]
    assert sizes[cache.knee(sizes, rates)] == 4
    assert sizes[cache.critical_point(sizes, rates)] == 256


def test_run_and_table() -> None:
    rng = np.random.default_rng(1)
    trace = rng.zipf(1.3, 5000).astype(np.uint64)
    ticks = iter(range(100))
    result = cache.run(trace, [4, 16, 64, 256], seed=2, slow_sizes=[4, 64],
                       timer=lambda: float(next(ticks)))
    by = {(r.policy, r.size): r for r in result.rows}
    assert by[("clairvoyant", 64)].hits >= by[("lru", 64)].hits
    assert by[("infinite", 4)].hits == result.n_refs - result.n_distinct
    assert ("clock", 16) not in by  # slow policies only at slow sizes
    text = cache.table(result)
    assert "critical_size" in text and "clairvoyant" in text
    with pytest.raises(ConfigError):
        cache.run(trace, [4], ["mru"])
    with pytest.raises(ConfigError):
        cache.run(trace, [0])
