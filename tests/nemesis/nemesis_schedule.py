"""The nemesis's fault menu and its seeded schedules. Pure: the same seed gives the same schedule.

A schedule is a list of :class:`Fault`, each at ``at_s`` seconds after the last of the first nodes
started, on a target (a node name, or None for Redis and the store), lasting ``duration_s`` (0 for an
instant fault). Generation simulates which nodes are alive so that a target exists when its fault
comes and at least one node of the first ones is never lost for good; a fault that follows a join
comes, half of the time, in the first 3 s after it (while the join's hand-offs run).

The menu (``MENU``; the store faults depend on the store, :func:`menu`):

* ``kill9_disk``: kill -9, its --out deleted (machine and disk lost); not restarted.
* ``kill9_keep``: kill -9; ``duration_s`` later started again with the same --out and node id.
* ``stop``: SIGSTOP for ``duration_s``, then SIGCONT (a frozen process, a clock that stops in a suspended VM).
* ``term_restart``: SIGTERM; once it exited (or ``duration_s``, the later), started again with the same --out.
* ``join``: a new node joins (``j1``, ``j2``...).
* ``join_slow``: a new node joins whose clocks (wall and monotonic) run at half speed (libfaketime).
* ``cut_closed`` / ``cut_blackhole``: the node's link to Redis refuses (RST) or swallows (accepted,
  nothing forwarded) for ``duration_s``; a black-holed connection resumes its bytes after the heal.
* ``redis_kill``: Redis killed -9, started again from its AOF ``duration_s`` later.
* ``redis_empty``: Redis killed -9, started again ``duration_s`` later with no data (no persistence).
* ``redis_flushall``: FLUSHALL (instant).
* file store: ``store_full`` (the store's filesystem filled to the last byte) and ``store_ro`` (remounted
  read-only), each for ``duration_s``;
* s3 store: ``store_down`` (the S3 endpoint refuses connections) and ``store_hang`` (black-holed), each
  for ``duration_s``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

NODE_FAULTS = ("kill9_disk", "kill9_keep", "stop", "term_restart", "cut_closed", "cut_blackhole")
JOINS = ("join", "join_slow")
REDIS_FAULTS = ("redis_kill", "redis_empty", "redis_flushall")
STORE_FAULTS = {"file": ("store_full", "store_ro"), "s3": ("store_down", "store_hang")}
MENU = (*NODE_FAULTS, *JOINS, *REDIS_FAULTS, *STORE_FAULTS["file"], *STORE_FAULTS["s3"])
INSTANT = ("kill9_disk", "join", "join_slow", "redis_flushall")
"""Faults with no duration (nothing to heal)."""
AFTER_JOIN_S = 3.0
DURATION_S = (2.0, 12.0)


@dataclass(frozen=True)
class Fault:
    at_s: float
    kind: str
    target: str | None = None
    duration_s: float = 0.0

    @property
    def heal_s(self) -> float:
        return self.at_s + self.duration_s

    def text(self) -> str:
        who = f" {self.target}" if self.target else ""
        lasting = f" for {self.duration_s:.1f}s" if self.duration_s else ""
        return f"t+{self.at_s:.1f}s {self.kind}{who}{lasting}"


def menu(store: str, kinds: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The faults a schedule over ``store`` may draw (``kinds``: a subset asked for)."""
    allowed = (*NODE_FAULTS, *JOINS, *REDIS_FAULTS, *STORE_FAULTS[store])
    if kinds is None:
        return allowed
    unknown = [k for k in kinds if k not in allowed]
    if unknown:
        raise ValueError(f"fault(s) {', '.join(unknown)} not on the menu for a {store} store; "
                         f"choose from {', '.join(allowed)}")
    return kinds


@dataclass
class _World:
    """Who is alive and busy while a schedule is drawn."""

    alive: list[str]
    busy_until: dict[str, float] = field(default_factory=dict)
    joined: int = 0

    def free(self, at_s: float, key: str) -> bool:
        return self.busy_until.get(key, -1.0) <= at_s


def draw(seed: int, n_faults: int, nodes: int, kinds: tuple[str, ...], window_s: float,
         durations: tuple[float, float] = DURATION_S) -> list[Fault]:
    """A seeded schedule of ``n_faults`` faults from ``kinds`` over ``nodes`` first nodes, the first
    ``window_s`` seconds, lasting between ``durations`` seconds (module docstring)."""
    rng = random.Random(seed)
    world = _World([f"n{i}" for i in range(nodes)])
    faults: list[Fault] = []
    at = 0.0
    times = sorted(rng.uniform(0.5, window_s) for _ in range(n_faults))
    for k in range(n_faults):
        after_join = bool(faults) and faults[-1].kind in JOINS and rng.random() < 0.5
        at = max(at, faults[-1].at_s + rng.uniform(0.0, AFTER_JOIN_S) if after_join else times[k])
        fault = _one(rng, world, round(at, 2), kinds, durations)
        if fault is not None:
            faults.append(fault)
    return faults


def _one(rng: random.Random, world: _World, at: float, kinds: tuple[str, ...],
         durations: tuple[float, float]) -> Fault | None:
    """One fault at ``at`` that fits the world (None when none of ``kinds`` does); updates the world."""
    for kind in rng.sample(kinds, len(kinds)):
        duration = 0.0 if kind in INSTANT else round(rng.uniform(*durations), 1)
        if kind in JOINS:
            world.joined += 1
            name = f"j{world.joined}"
            world.alive.append(name)
            world.busy_until[name] = at + AFTER_JOIN_S  # a node fault on it may come right after: not on it
            return Fault(at, kind, name)
        if kind in NODE_FAULTS:
            targets = [n for n in world.alive if world.free(at, n)]
            if kind == "kill9_disk":  # one of the first nodes is never lost for good
                firsts = [n for n in world.alive if n.startswith("n")]
                targets = [n for n in targets if not (n.startswith("n") and len(firsts) <= 1)]
            if not targets:
                continue
            target = rng.choice(sorted(targets))
            if kind == "kill9_disk":
                world.alive.remove(target)
            world.busy_until[target] = at + duration
            return Fault(at, kind, target, duration)
        key = "redis" if kind in REDIS_FAULTS else "store"
        if world.free(at, key):
            world.busy_until[key] = at + duration
            return Fault(at, kind, None, duration)
    return None


def last_heal_s(faults: list[Fault]) -> float:
    return max((f.heal_s for f in faults), default=0.0)


def describe(faults: list[Fault]) -> str:
    return "; ".join(f.text() for f in faults) or "no fault"
