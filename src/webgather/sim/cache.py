"""URL-cache policies replayed on a URL trace: miss rate against cache size. Pure.

A trace is a ``uint64`` array of URL fingerprints, one per seen-test, in the
order a crawler makes them (:mod:`webgather.sim.traces`). Keys are first mapped
to dense ids ``0..U-1``. Policies and how each is computed:

* ``infinite``    misses = distinct keys (compulsory misses only). Exact, O(N log N).
* ``static``      the ``C`` most frequent keys of the whole trace, pre-loaded and never
  replaced (the study's static cache); hits(C) = sum of the C largest key counts,
  for every C at once. Same answers as :class:`webgather.cachepolicy.StaticCache`.
* ``lru``         one pass for all sizes: LRU is a stack algorithm, a reference hits
  in a cache of C iff its *stack distance* (distinct keys since the key's previous
  reference) is < C. Distances come from ``d_i = (i - p_i - 1) - #{j < i : p_j > p_i}``
  (``p`` = previous reference, -1 if none), the count done offline level by level
  (a merge-sort style divide and conquer, one ``searchsorted`` per level): N log^2 N
  in numpy. Same answers as :class:`webgather.cachepolicy.LruCache`.
* ``clairvoyant`` Belady's MIN: on a miss with a full cache evict the key whose next
  reference is farthest (a key never referenced again counts as farthest; evicting
  the arriving key itself is a bypass). Next references precomputed with numpy; a
  max-heap with lazily dropped stale entries. One Python pass per size.
* ``clock``, ``random``  replayed through :mod:`webgather.cachepolicy` (``ClockCache``,
  ``RandomCache`` with ``random.Random(seed)``): one Python pass per size.

Knees of a hit-rate curve, with ``x = log2(size)``: :func:`knee` is the Kneedle
point (x and hit rate scaled to [0, 1], the size where the curve lies farthest
above the chord from the first to the last size). Crawl traces have two bends:
a *shoulder* at tens of entries (duplicate links within a page and a site's
navigation links) and, after the steepest rise, the *critical point* in the
study's sense ("much smaller is much worse, much larger gains little"):
:func:`critical_point` is the Kneedle point of the curve from the start of its
steepest rise (largest gain between consecutive sizes) to the end.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from webgather.cachepolicy import ClockCache, RandomCache
from webgather.errors import AnalysisError, ConfigError
from webgather.sim.tables import render

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "POLICIES",
    "STUDY_HIT_RATE",
    "STUDY_SIZE",
    "CacheResult",
    "CacheRow",
    "belady_hits",
    "critical_point",
    "dense_ids",
    "knee",
    "lru_hits",
    "next_use",
    "plot",
    "prev_use",
    "replay_hits",
    "run",
    "stack_distances",
    "static_hits",
    "table",
]

IntArray = NDArray[np.int64]
POLICIES = ("random", "static", "lru", "clock", "clairvoyant", "infinite")
STUDY_SIZE = 50_000
STUDY_HIT_RATE = 0.80
_CHUNK = 1 << 20


def dense_ids(trace: NDArray[np.uint64]) -> tuple[IntArray, int]:
    """Keys mapped to ``0..U-1`` (in sorted key order) and ``U``."""
    keys = np.asarray(trace)
    if keys.ndim != 1:
        raise AnalysisError("a URL trace must be a one-dimensional array")
    uniq, inverse = np.unique(keys, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), int(uniq.shape[0])


def _neighbours(ids: IntArray) -> tuple[IntArray, IntArray]:
    order = np.argsort(ids, kind="stable")
    same = ids[order[:-1]] == ids[order[1:]]
    return order, same


def next_use(ids: IntArray) -> IntArray:
    """Index of each reference's next reference to the same key; ``len(ids)`` if none."""
    n = ids.shape[0]
    out = np.full(n, n, dtype=np.int64)
    if n > 1:
        order, same = _neighbours(ids)
        out[order[:-1][same]] = order[1:][same]
    return out


def prev_use(ids: IntArray) -> IntArray:
    """Index of each reference's previous reference to the same key; -1 if none."""
    n = ids.shape[0]
    out = np.full(n, -1, dtype=np.int64)
    if n > 1:
        order, same = _neighbours(ids)
        out[order[1:][same]] = order[:-1][same]
    return out


def stack_distances(ids: IntArray) -> IntArray:
    """LRU stack distance of every reference (``len(ids)`` for a first reference)."""
    n = ids.shape[0]
    prev = prev_use(ids)
    idx = np.arange(n, dtype=np.int64)
    later = np.zeros(n, dtype=np.int64)  # #{j < i : prev[j] > prev[i]}
    width = n + 2
    half = 1
    queries = prev >= 0
    while half < n:
        block = idx // (2 * half)
        left = (idx % (2 * half)) < half
        left_keys = np.sort(block[left] * width + (prev[left] + 1))
        q = np.flatnonzero(~left & queries)
        qb = block[q] * width
        hi = np.searchsorted(left_keys, qb + (width - 1), side="right")
        lo = np.searchsorted(left_keys, qb + prev[q] + 1, side="right")
        later[q] += hi - lo
        half *= 2
    dist = np.full(n, n, dtype=np.int64)
    dist[queries] = (idx[queries] - prev[queries] - 1) - later[queries]
    return dist


def lru_hits(ids: IntArray, sizes: Sequence[int]) -> IntArray:
    """LRU hits for every size in one pass (stack distances)."""
    dist = np.sort(stack_distances(ids))
    return np.searchsorted(dist, np.asarray(sizes, dtype=np.int64), side="left").astype(np.int64)


def static_hits(ids: IntArray, sizes: Sequence[int]) -> IntArray:
    """Hits of a cache pre-loaded with the C most frequent keys, for every C."""
    counts = np.sort(np.bincount(ids))[::-1]
    cum = np.concatenate([[0], np.cumsum(counts)])
    capped = np.minimum(np.asarray(sizes, dtype=np.int64), counts.shape[0])
    return cum[capped].astype(np.int64)


def belady_hits(ids: IntArray, size: int, nxt: IntArray | None = None) -> int:
    """Hits of the clairvoyant (Belady MIN) cache of ``size`` entries."""
    if size <= 0 or ids.shape[0] == 0:
        return 0
    nxt = next_use(ids) if nxt is None else nxt
    never = ids.shape[0]
    span = int(ids.max()) + 1  # heap entry = -(next_use * span + key): one int, max-heap
    cached_next = [-1] * span  # next use of a cached key, -1 if absent
    heap: list[int] = []
    push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace
    hits = filled = 0
    limit = max(4 * size, 1 << 16)
    for lo in range(0, ids.shape[0], _CHUNK):
        for key, nu in zip(ids[lo:lo + _CHUNK].tolist(), nxt[lo:lo + _CHUNK].tolist(), strict=True):
            if cached_next[key] >= 0:
                hits += 1
                cached_next[key] = nu
                push(heap, -(nu * span + key))
            elif filled < size:
                filled += 1
                cached_next[key] = nu
                push(heap, -(nu * span + key))
            elif nu < never:
                far, victim = divmod(-heap[0], span)
                while cached_next[victim] != far:  # a stale entry: the key moved on
                    pop(heap)
                    far, victim = divmod(-heap[0], span)
                if far > nu:
                    cached_next[victim] = -1
                    cached_next[key] = nu
                    replace(heap, -(nu * span + key))
            if len(heap) > limit:
                heap = _compact(heap, cached_next, span)
    return hits


def _compact(heap: list[int], cached_next: list[int], span: int) -> list[int]:
    """Drop stale entries (a key whose next use has moved on or that was evicted)."""
    live = [e for e in heap if cached_next[(-e) % span] == (-e) // span]
    heapq.heapify(live)
    return live


def replay_hits(policy: str, ids: IntArray, size: int, seed: int = 0) -> int:
    """Hits of a :mod:`webgather.cachepolicy` cache (``clock`` or ``random``) on the trace."""
    access: Callable[[int], bool]
    if policy == "clock":
        access = ClockCache(size).access
    elif policy == "random":
        access = RandomCache(size, random.Random(seed)).access
    else:
        raise ConfigError(f"replay_hits plays clock or random, not {policy!r}")
    hits = 0
    for lo in range(0, ids.shape[0], _CHUNK):
        hits += sum(map(access, ids[lo:lo + _CHUNK].tolist()))
    return hits


def knee(sizes: Sequence[int], hit_rates: Sequence[float]) -> int:
    """Index of the Kneedle point of an increasing hit-rate curve (see the module doc)."""
    x = np.log2(np.asarray(sizes, dtype=np.float64))
    y = np.asarray(hit_rates, dtype=np.float64)
    if x.shape[0] < 3 or np.ptp(y) <= 0:
        return 0
    xn = (x - x[0]) / (x[-1] - x[0])
    yn = (y - y.min()) / np.ptp(y)
    return int(np.argmax(yn - xn))


def critical_point(sizes: Sequence[int], hit_rates: Sequence[float]) -> int:
    """Index of the knee after the steepest rise (see the module doc)."""
    y = np.asarray(hit_rates, dtype=np.float64)
    if y.shape[0] < 2:
        return 0
    steepest = int(np.argmax(np.diff(y)))
    tail = list(sizes)[steepest:]
    if len(tail) < 3:
        return min(steepest + 1, int(y.shape[0]) - 1)
    return steepest + knee(tail, list(y[steepest:]))


@dataclass(frozen=True)
class CacheRow:
    policy: str
    size: int
    hits: int
    miss_rate: float
    seconds: float
    """Wall time of the computation that produced this row's policy (shared by its sizes)."""


@dataclass(frozen=True)
class CacheResult:
    rows: tuple[CacheRow, ...]
    n_refs: int
    n_distinct: int
    seconds: dict[str, float]


def _curve(policy: str, ids: IntArray, sizes: Sequence[int], seed: int,
           nxt: IntArray | None) -> list[int]:
    if policy == "lru":
        return [int(h) for h in lru_hits(ids, sizes)]
    if policy == "static":
        return [int(h) for h in static_hits(ids, sizes)]
    if policy == "clairvoyant":
        return [belady_hits(ids, s, nxt) for s in sizes]
    if policy in ("clock", "random"):
        return [replay_hits(policy, ids, s, seed) for s in sizes]
    raise ConfigError(f"unknown cache policy {policy!r}; choose from {POLICIES}")


def run(trace: NDArray[np.uint64], sizes: Sequence[int], policies: Sequence[str] = POLICIES,
        seed: int = 0, slow_sizes: Sequence[int] | None = None,
        timer: Callable[[], float] | None = None) -> CacheResult:
    """Hit counts of each policy at each size. ``slow_sizes`` (default ``sizes``) are used for
    the one-pass-per-size policies (clairvoyant, clock, random). ``timer`` (e.g.
    ``time.perf_counter`` from the shell) times each policy; without it times are 0."""
    ids, distinct = dense_ids(trace)
    if ids.shape[0] == 0:
        raise AnalysisError("the URL trace is empty")
    if any(s < 1 for s in sizes):
        raise ConfigError("cache sizes must be >= 1")
    clock = timer or (lambda: 0.0)
    nxt = next_use(ids) if "clairvoyant" in policies else None
    rows: list[CacheRow] = []
    seconds: dict[str, float] = {}
    for policy in policies:
        start = clock()
        if policy == "infinite":
            use, hits = list(sizes), [ids.shape[0] - distinct] * len(sizes)
        else:
            slow = policy in ("clairvoyant", "clock", "random")
            use = list(slow_sizes if slow and slow_sizes is not None else sizes)
            hits = _curve(policy, ids, use, seed, nxt)
        seconds[policy] = clock() - start
        rows += [CacheRow(policy, s, h, 1.0 - h / ids.shape[0], seconds[policy])
                 for s, h in zip(use, hits, strict=True)]
    return CacheResult(tuple(rows), int(ids.shape[0]), distinct, seconds)


def _by_policy(result: CacheResult) -> dict[str, list[CacheRow]]:
    out: dict[str, list[CacheRow]] = {}
    for row in result.rows:
        out.setdefault(row.policy, []).append(row)
    return out


def table(result: CacheResult) -> str:
    """Miss rate per policy and size, then each curve's knee and its hit rate at 50,000 entries."""
    curves = _by_policy(result)
    sizes = sorted({r.size for r in result.rows})
    grid = {(r.policy, r.size): r.miss_rate for r in result.rows}
    body = [[s] + [grid.get((p, s), float("nan")) for p in curves] for s in sizes]
    title = (f"cache: {result.n_refs:,} references, {result.n_distinct:,} distinct keys "
             f"(infinite-cache hit rate {1 - result.n_distinct / result.n_refs:.3f}); miss rates")
    out = [render(["size"] + list(curves), body, title), ""]
    summary = []
    for policy, rows in curves.items():
        ss, rates = [r.size for r in rows], [1.0 - r.miss_rate for r in rows]
        shoulder, crit = knee(ss, rates), critical_point(ss, rates)
        study = float(np.interp(np.log2(STUDY_SIZE), np.log2(ss), rates)) if len(ss) > 1 else rates[0]
        summary.append([policy, ss[shoulder], rates[shoulder], ss[crit], rates[crit], study,
                        result.seconds.get(policy, 0.0)])
    headers = ["policy", "shoulder_size", "hit@shoulder", "critical_size", "hit@critical",
               "hit@50k", "seconds"]
    out.append(render(headers, summary, f"knees (the study: critical point ~{STUDY_SIZE:,} "
                      f"entries, ~{STUDY_HIT_RATE:.0%} hits)"))
    return "\n".join(out)


def plot(result: CacheResult, fig: Figure) -> None:
    """Miss rate against cache size (log2 x axis), one line per policy."""
    ax = fig.subplots()
    for policy, rows in _by_policy(result).items():
        ax.plot([r.size for r in rows], [r.miss_rate for r in rows], marker=".", label=policy)
    ax.axvline(STUDY_SIZE, color="grey", linestyle=":", label="50,000 (study)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("cache size (entries)")
    ax.set_ylabel("miss rate")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.suptitle(f"URL cache: {result.n_refs:,} references, {result.n_distinct:,} distinct")
