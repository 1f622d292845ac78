"""SimHash and the near-duplicate index."""

from __future__ import annotations

import numpy as np

from webgather.recrawl.simhash import SimHashIndex, hamming, simhash

WORDS = ("crawler frontier archive fetch parse revisit policy budget freshness change estimate "
         "bucket node host robots sitemap link page index record digest").split()


def _text(seed: int, n: int = 400, words: tuple[str, ...] | list[str] = WORDS) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(words[i] for i in rng.integers(0, len(words), n))


def test_identical_texts_hash_equal_and_short_texts_get_none() -> None:
    assert simhash(_text(1)) == simhash(_text(1))
    assert simhash("Not found") is None
    assert simhash(" ".join(WORDS[:9])) is not None


def test_a_small_edit_moves_few_bits_and_different_texts_many() -> None:
    base = _text(1, 2000)
    edited = base.replace("crawler frontier", "crawler frontiers", 1) + " one more"
    near = hamming(simhash(base) or 0, simhash(edited) or 0)
    other = [f"w{i}" for i in range(500)]
    far = hamming(simhash(base) or 0, simhash(_text(2, 2000, other)) or 0)
    assert near <= 3 < 16 < far


def test_index_finds_near_duplicates_and_nothing_else() -> None:
    index = SimHashIndex(max_bits=3)
    a = 0x0123_4567_89AB_CDEF
    index.add(1, a)
    index.add(2, a ^ 0b111 << 40)  # 3 bits away, all within one block
    index.add(3, a ^ (1 << 63 | 1 << 30 | 1 << 10 | 1))  # 4 bits away
    assert index.nearest(a, exclude=1) == (2, 3)
    assert index.nearest(a ^ 1) == (1, 1)
    assert index.nearest(a ^ (1 | 1 << 17 | 1 << 33 | 1 << 50)) == (1, 4) or index.nearest(a ^ (1 | 1 << 17 | 1 << 33 | 1 << 50)) is None
    index.remove(2)
    assert index.nearest(a, exclude=1) is None
    index.add(1, ~a & (2**64 - 1))  # replaced
    assert len(index) == 2
    assert index.nearest(a) is None


def test_index_agrees_with_a_linear_scan() -> None:
    rng = np.random.default_rng(9)
    stored = [int(x) for x in rng.integers(0, 2**63, 300, dtype=np.int64)]
    index = SimHashIndex(max_bits=3)
    for fp, value in enumerate(stored):
        index.add(fp, value)
    for _ in range(300):
        base = stored[int(rng.integers(0, len(stored)))]
        flips = rng.choice(64, int(rng.integers(0, 5)), replace=False)
        query = base
        for bit in flips:
            query ^= 1 << int(bit)
        scan = sorted((hamming(query, v), fp) for fp, v in enumerate(stored) if hamming(query, v) <= 3)
        found = index.nearest(query)
        assert (found is None) == (not scan)
        if found is not None:
            assert (found[1], found[0]) == scan[0]
