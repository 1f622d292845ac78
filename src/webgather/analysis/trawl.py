"""Web communities by trawling for bipartite cores (Kumar et al. 1999). Pure.

A core ``(F, C)`` is a complete bipartite graph: every fan in ``F`` links to
every center in ``C``. What this module does, step by step (the documents'
recipe, made exact):

1. Links: distinct page links between *different* hosts (same-host links are
   navigational, not endorsements). Deduplicated; pages are integers.
2. Fans: pages whose links reach at least ``min_fan_hosts`` (6) distinct
   other hosts.
3. Centers: link targets whose effective in-degree
   (:func:`~webgather.analysis.degrees.effective_in_degree`) is at most
   ``max_center_effective_in`` (9): pages with more are already popular and
   are removed, with every link to them.
4. Pruning for cores with ``i`` fans and ``j`` centers: repeatedly drop fans
   with fewer than ``j`` remaining out-links and centers with fewer than
   ``i`` remaining in-links, until nothing changes (a fixpoint: no core loses
   a member, since every member of a core has those degrees inside it).
5. Enumeration through inverted lists (fan -> centers, center -> fans),
   a-priori style: a set ``S`` of centers (ascending ids) with fans ``F(S)``
   (the fans linking to all of ``S``, ``|F(S)| >= i``) is extended by each
   center ``c > max(S)`` linked from at least ``i`` fans of ``F(S)``. The
   pairs (the level where candidates are most numerous) come at once from
   sparse products ``centers x fans @ fans x centers`` (co-citation counts),
   in blocks of bounded work; larger sets grow one set at a time.

Not done: Kumar et al. also dropped mirrored and near-duplicate fans
(shingles); pages here are URLs and duplicate content is not detected.

A core is counted once per center set ``C`` of size ``j``: its fans are all
of ``F(C)``, and it counts when ``|F(C)| >= i`` (so a K(5,3) is one core with
5 fans, not ten K(3,3)s). ``max_cores`` bounds the enumeration; the result
says when it was hit. Counts are taken as the candidate fans grow (a seeded
random order; the first 10 %, 20 %, ... 100 %).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from webgather.analysis.graphops import SimpleGraph

__all__ = ["CoreCount", "TrawlResult", "candidate_links", "enumerate_cores", "prune", "trawl"]

Core = tuple[tuple[int, ...], tuple[int, ...]]
"""(center page ids ascending, fan page ids ascending)."""
_Set = tuple[tuple[int, ...], np.ndarray]
"""(compact center ids ascending, compact fan ids) during enumeration."""


@dataclass(frozen=True)
class CoreCount:
    """Cores found with one candidate-fan fraction."""

    fraction: float
    fans: int
    """Candidate fans used."""
    pruned_fans: dict[int, int]
    """j -> fans left after pruning for K(i, j)."""
    pruned_centers: dict[int, int]
    cores: dict[int, int]
    """j -> cores with at least i fans and exactly j centers."""
    truncated: bool


@dataclass(frozen=True)
class TrawlResult:
    min_fans: int
    center_sizes: tuple[int, ...]
    min_fan_hosts: int
    max_center_effective_in: int
    cross_links: int
    fans: int
    removed_centers: int
    """Link targets dropped for effective in-degree over the limit."""
    candidate_links: int
    growth: list[CoreCount]
    fan_histogram: dict[int, dict[int, int]]
    """With all fans: j -> {fans per core: cores}."""
    examples: dict[int, list[Core]]
    """With all fans: j -> up to 5 cores with the most fans (page ids)."""


def candidate_links(
    graph: SimpleGraph,
    page_host: np.ndarray,
    effective_in: np.ndarray,
    *,
    min_fan_hosts: int = 6,
    max_center_effective_in: int = 9,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """(fan ids, link src, link dst, cross-host links, removed centers): steps 1-3."""
    hosts = page_host.astype(np.int64, copy=False)
    cross = hosts[graph.src] != hosts[graph.dst]
    src = graph.src[cross].astype(np.int64)
    dst = graph.dst[cross].astype(np.int64)
    n_hosts = int(hosts.max()) + 1 if hosts.size else 1
    pair = np.sort(src * n_hosts + hosts[dst])
    first = np.concatenate(([True], pair[1:] != pair[:-1])) if pair.size else pair.astype(bool)
    host_count = np.bincount(pair[first] // n_hosts, minlength=graph.n)
    is_fan = host_count >= min_fan_hosts
    popular = effective_in > max_center_effective_in
    keep = is_fan[src] & ~popular[dst]
    removed = int(np.count_nonzero(popular & (np.bincount(dst, minlength=graph.n) > 0)))
    return np.flatnonzero(is_fan), src[keep], dst[keep], int(src.size), removed


def prune(src: np.ndarray, dst: np.ndarray, min_fans: int, centers: int) -> tuple[np.ndarray, np.ndarray]:
    """Links left after iterated removal of fans with < ``centers`` out-links
    and centers with < ``min_fans`` in-links."""
    while src.size:
        fan_deg = np.bincount(src)
        cen_deg = np.bincount(dst)
        keep = (fan_deg[src] >= centers) & (cen_deg[dst] >= min_fans)
        if keep.all():
            break
        src, dst = src[keep], dst[keep]
    return src, dst


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values ascending, index of each value among them)."""
    if values.size == 0:
        return values.copy(), np.zeros(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


class _Lists:
    """Inverted lists of pruned links over compact ids: fan -> centers, center -> fans."""

    def __init__(self, src: np.ndarray, dst: np.ndarray) -> None:
        self.fan_ids, fan = _factorize(src)
        self.center_ids, center = _factorize(dst)
        ones = np.ones(src.size, dtype=np.int32)
        shape = (self.fan_ids.size, self.center_ids.size)
        self.by_fan = sp.csr_array((ones, (fan, center)), shape=shape)
        self.by_fan.sort_indices()
        self.by_center = sp.csr_array(self.by_fan.T.tocsr())
        self.by_center.sort_indices()

    def fans_of(self, center: int) -> np.ndarray:
        ptr = self.by_center.indptr
        return np.asarray(self.by_center.indices[ptr[center] : ptr[center + 1]], dtype=np.int64)

    def centers_of_fans(self, fans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(center per link, fan per link) of the given fans' links."""
        ptr = self.by_fan.indptr
        starts, lengths = ptr[fans], ptr[fans + 1] - ptr[fans]
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        return self.by_fan.indices[offsets].astype(np.int64), np.repeat(fans, lengths)

    def pairs(self, min_fans: int, block_work: int = 20_000_000) -> list[tuple[int, int]]:
        """Center pairs (a < b) with at least ``min_fans`` common fans, by sparse
        products of center blocks with the fan lists (co-citation counts)."""
        fan_degree = np.diff(self.by_fan.indptr)
        work = np.cumsum(np.bincount(self.by_fan.indices, weights=fan_degree[self._fan_per_link()],
                                     minlength=self.center_ids.size))
        found: list[tuple[int, int]] = []
        start, n_centers = 0, self.center_ids.size
        while start < n_centers:
            done = float(work[start - 1]) if start else 0.0
            stop = min(n_centers, max(start + 1, int(np.searchsorted(work, done + block_work, side="right"))))
            product = (self.by_center[start:stop] @ self.by_fan).tocoo()
            rows = product.row.astype(np.int64) + start
            keep = (product.col > rows) & (product.data >= min_fans)
            found += zip(rows[keep].tolist(), product.col[keep].astype(np.int64).tolist())
            start = stop
        return sorted(found)

    def _fan_per_link(self) -> np.ndarray:
        return np.repeat(np.arange(self.fan_ids.size), np.diff(self.by_fan.indptr))


def _extend(lists: _Lists, centers: tuple[int, ...], fans: np.ndarray, min_fans: int) -> list[_Set]:
    linked, fan_of_link = lists.centers_of_fans(fans)
    later = linked > centers[-1]
    linked, fan_of_link = linked[later], fan_of_link[later]
    order = np.lexsort((fan_of_link, linked))
    linked, fan_of_link = linked[order], fan_of_link[order]
    distinct, inverse = _factorize(linked)
    counts = np.bincount(inverse, minlength=distinct.size)
    ptr = np.concatenate(([0], np.cumsum(counts)))
    return [
        ((*centers, int(distinct[g])), fan_of_link[ptr[g] : ptr[g + 1]])
        for g in np.flatnonzero(counts >= min_fans)
    ]


def _level_two(lists: _Lists, min_fans: int) -> list[_Set]:
    level: list[_Set] = []
    for a, b in lists.pairs(min_fans):
        common = np.intersect1d(lists.fans_of(a), lists.fans_of(b), assume_unique=True)
        level.append(((a, b), common))
    return level


def enumerate_cores(
    src: np.ndarray, dst: np.ndarray, min_fans: int, centers: int, *, max_cores: int = 1_000_000
) -> tuple[list[Core], bool]:
    """Every center set of size ``centers`` with at least ``min_fans`` common fans
    (on already pruned links), as page ids; (cores, truncated)."""
    if src.size == 0 or centers < 1:
        return [], False
    lists = _Lists(src, dst)
    level: list[_Set]
    if centers == 1:
        level = [((c,), lists.fans_of(c)) for c in range(lists.center_ids.size)]
        level = [s for s in level if s[1].size >= min_fans]
    else:
        level = _level_two(lists, min_fans)
    truncated = len(level) > max_cores
    for _ in range(centers - 2):
        grown: list[_Set] = []
        for core_centers, core_fans in level[:max_cores]:
            grown += _extend(lists, core_centers, core_fans, min_fans)
            if len(grown) > max_cores:
                truncated = True
                break
        level = grown
    return [_as_pages(lists, s) for s in level[:max_cores]], truncated or len(level) > max_cores


def _as_pages(lists: _Lists, found: _Set) -> Core:
    centers = tuple(int(lists.center_ids[c]) for c in found[0])
    fans = tuple(int(f) for f in np.sort(lists.fan_ids[found[1]]))
    return tuple(sorted(centers)), fans


def _cores_at(
    src: np.ndarray, dst: np.ndarray, min_fans: int, sizes: tuple[int, ...], max_cores: int
) -> tuple[dict[int, tuple[int, int]], dict[int, list[Core]], bool]:
    """j -> (fans, centers) left by pruning; j -> cores; truncated."""
    pruned: dict[int, tuple[int, int]] = {}
    found: dict[int, list[Core]] = {}
    truncated = False
    for j in sizes:
        ps, pd = prune(src, dst, min_fans, j)
        pruned[j] = (int(np.count_nonzero(np.bincount(ps))), int(np.count_nonzero(np.bincount(pd))))
        found[j], cut = enumerate_cores(ps, pd, min_fans, j, max_cores=max_cores)
        truncated = truncated or cut
    return pruned, found, truncated


def trawl(
    graph: SimpleGraph,
    page_host: np.ndarray,
    effective_in: np.ndarray,
    rng: np.random.Generator,
    *,
    min_fans: int = 3,
    center_sizes: tuple[int, ...] = (3, 4),
    min_fan_hosts: int = 6,
    max_center_effective_in: int = 9,
    steps: int = 10,
    max_cores: int = 1_000_000,
) -> TrawlResult:
    """Cores K(>= min_fans, j) for each j, counted as the candidate fans grow."""
    fans, src, dst, cross, removed = candidate_links(
        graph, page_host, effective_in,
        min_fan_hosts=min_fan_hosts, max_center_effective_in=max_center_effective_in,
    )
    rank = np.full(graph.n, fans.size, dtype=np.int64)
    rank[rng.permutation(fans)] = np.arange(fans.size)
    growth: list[CoreCount] = []
    found: dict[int, list[Core]] = {j: [] for j in center_sizes}
    for step in range(1, steps + 1):
        used = -(-fans.size * step // steps)
        use = rank[src] < used
        pruned, found, cut = _cores_at(src[use], dst[use], min_fans, center_sizes, max_cores)
        growth.append(CoreCount(
            fraction=step / steps, fans=int(used),
            pruned_fans={j: p[0] for j, p in pruned.items()},
            pruned_centers={j: p[1] for j, p in pruned.items()},
            cores={j: len(c) for j, c in found.items()}, truncated=cut,
        ))
    histogram = {j: _fan_histogram(c) for j, c in found.items()}
    examples = {j: sorted(c, key=lambda core: (-len(core[1]), core[0]))[:5] for j, c in found.items()}
    return TrawlResult(
        min_fans=min_fans, center_sizes=tuple(center_sizes), min_fan_hosts=min_fan_hosts,
        max_center_effective_in=max_center_effective_in, cross_links=cross, fans=int(fans.size),
        removed_centers=removed, candidate_links=int(src.size), growth=growth,
        fan_histogram=histogram, examples=examples,
    )


def _fan_histogram(cores: list[Core]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for _, core_fans in cores:
        counts[len(core_fans)] = counts.get(len(core_fans), 0) + 1
    return dict(sorted(counts.items()))
