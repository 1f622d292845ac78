"""64-bit SimHash of a page's text and an index for near-duplicates. Pure.

:func:`simhash` (Charikar 2002; as used for web pages by Manku, Jain and Das
Sarma, WWW 2007): the features of a text are its lower-cased word bigrams
(single words for one-word texts), each hashed to 64 bits (BLAKE2b, as URL
fingerprints are) and weighted by its count; bit ``i`` of the SimHash is set
when the features with bit ``i`` set outweigh those without. Similar texts
get SimHashes a few bits apart: :func:`hamming`.

:class:`SimHashIndex` finds a stored SimHash within ``max_bits`` of a query
without a scan: the 64 bits are cut into ``max_bits + 1`` blocks, and two
hashes at most ``max_bits`` apart agree exactly on at least one block
(pigeonhole), so each block value is a key to the candidates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from webgather.urls import fingerprints

__all__ = ["MIN_FEATURES", "SimHashIndex", "hamming", "simhash"]

_WORD = re.compile(r"\w+", re.UNICODE)
MIN_FEATURES = 8
"""Texts with fewer features get no SimHash (None): too short to call near-duplicates."""
_MASK64 = (1 << 64) - 1


def _features(text: str) -> Iterator[str]:
    words = _WORD.findall(text.lower())
    if len(words) == 1:
        yield words[0]
        return
    for a, b in zip(words, words[1:]):
        yield a + " " + b


def simhash(text: str, min_features: int = MIN_FEATURES) -> int | None:
    """The 64-bit SimHash of ``text`` (an unsigned int), or None for texts under ``min_features``."""
    features = list(_features(text))
    if len(features) < min_features:
        return None
    hashes = fingerprints(features)
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    weight = bits.sum(axis=0, dtype=np.int64) * 2 - len(features)
    packed = np.packbits(weight > 0, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def hamming(a: int, b: int) -> int:
    """Bits in which two 64-bit hashes differ."""
    return ((a ^ b) & _MASK64).bit_count()


class SimHashIndex:
    """SimHashes of stored pages, keyed by URL fingerprint; finds near-duplicates."""

    def __init__(self, max_bits: int = 3) -> None:
        if not 0 <= max_bits < 16:
            raise ValueError("max_bits must be in 0..15")
        self.max_bits = max_bits
        n = max_bits + 1
        edges = [round(i * 64 / n) for i in range(n + 1)]
        self._blocks = [(lo, (1 << (hi - lo)) - 1) for lo, hi in zip(edges, edges[1:])]
        self._tables: list[dict[int, dict[int, int]]] = [{} for _ in self._blocks]
        self._hash_of: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._hash_of)

    def add(self, fp: int, value: int) -> None:
        """Store (or replace) the SimHash of the page ``fp``."""
        self.remove(fp)
        self._hash_of[fp] = value
        for table, (shift, mask) in zip(self._tables, self._blocks):
            table.setdefault((value >> shift) & mask, {})[fp] = value

    def remove(self, fp: int) -> None:
        value = self._hash_of.pop(fp, None)
        if value is None:
            return
        for table, (shift, mask) in zip(self._tables, self._blocks):
            bucket = table.get((value >> shift) & mask)
            if bucket is not None:
                bucket.pop(fp, None)
                if not bucket:
                    del table[(value >> shift) & mask]

    def nearest(self, value: int, exclude: int | None = None) -> tuple[int, int] | None:
        """``(fp, distance)`` of the closest stored page within ``max_bits`` (not ``exclude``), or None."""
        best: tuple[int, int] | None = None
        for table, (shift, mask) in zip(self._tables, self._blocks):
            for fp, other in table.get((value >> shift) & mask, {}).items():
                if fp == exclude:
                    continue
                distance = hamming(value, other)
                if distance <= self.max_bits and (best is None or (distance, fp) < (best[1], best[0])):
                    best = (fp, distance)
        return best
