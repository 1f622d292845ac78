"""Cache replacement policies for URL fingerprints. Pure.

The URL-caching study (Broder, Najork, Wiener) compares random replacement,
static, LRU and CLOCK against the clairvoyant and infinite bounds. The same
classes serve two users: the cache in front of the seen-set, and the simulator
(:mod:`webgather.sim.cache`, which adds the clairvoyant and infinite bounds that
need the whole trace). Every policy answers one question per access: was the
key in the cache? On a miss the key is admitted (the static cache admits none).
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol

__all__ = [
    "CachePolicy",
    "ClockCache",
    "LruCache",
    "RandomCache",
    "StaticCache",
    "make_cache",
]


class CachePolicy(Protocol):
    """A bounded set of keys with a replacement rule."""

    capacity: int

    def access(self, key: int) -> bool:
        """True on a hit. On a miss, admit ``key`` (evicting one if full)."""
        ...

    def __len__(self) -> int: ...


class LruCache:
    """Least recently used."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[int, None] = OrderedDict()

    def access(self, key: int) -> bool:
        entries = self._entries
        if key in entries:
            entries.move_to_end(key)
            return True
        if self.capacity > 0:
            if len(entries) >= self.capacity:
                entries.popitem(last=False)
            entries[key] = None
        return False

    def __len__(self) -> int:
        return len(self._entries)


class ClockCache:
    """CLOCK: a ring of slots with a reference bit; the hand clears bits until it finds a victim."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._slot_of: dict[int, int] = {}
        self._keys: list[int] = []
        self._referenced: bytearray = bytearray(capacity)
        self._hand = 0

    def access(self, key: int) -> bool:
        slot = self._slot_of.get(key)
        if slot is not None:
            self._referenced[slot] = 1
            return True
        if self.capacity <= 0:
            return False
        if len(self._keys) < self.capacity:
            self._slot_of[key] = len(self._keys)
            self._keys.append(key)
            return False
        referenced = self._referenced
        hand = self._hand
        while referenced[hand]:
            referenced[hand] = 0
            hand = (hand + 1) % self.capacity
        del self._slot_of[self._keys[hand]]
        self._keys[hand] = key
        self._slot_of[key] = hand
        self._hand = (hand + 1) % self.capacity
        return False

    def __len__(self) -> int:
        return len(self._keys)


class RandomCache:
    """Random replacement; the victim is drawn from an injected generator."""

    def __init__(self, capacity: int, rng: random.Random) -> None:
        self.capacity = capacity
        self._rng = rng
        self._slot_of: dict[int, int] = {}
        self._keys: list[int] = []

    def access(self, key: int) -> bool:
        if key in self._slot_of:
            return True
        if self.capacity <= 0:
            return False
        if len(self._keys) < self.capacity:
            self._slot_of[key] = len(self._keys)
            self._keys.append(key)
            return False
        victim = self._rng.randrange(self.capacity)
        del self._slot_of[self._keys[victim]]
        self._keys[victim] = key
        self._slot_of[key] = victim
        return False

    def __len__(self) -> int:
        return len(self._keys)


class StaticCache:
    """A fixed set chosen in advance (the study uses the most popular keys); never admits."""

    def __init__(self, capacity: int, keys: Iterable[int] = ()) -> None:
        self.capacity = capacity
        self._keys: set[int] = set()
        for key in keys:
            if len(self._keys) >= capacity:
                break
            self._keys.add(key)

    def access(self, key: int) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


def make_cache(policy: str, capacity: int, seed: int = 0) -> CachePolicy:
    """Build a cache by name: ``lru``, ``clock``, ``random`` or ``static`` (empty)."""
    if policy == "lru":
        return LruCache(capacity)
    if policy == "clock":
        return ClockCache(capacity)
    if policy == "random":
        return RandomCache(capacity, random.Random(seed))
    if policy == "static":
        return StaticCache(capacity)
    raise ValueError(f"unknown cache policy {policy!r}")
