"""PageRank, HITS and the host graph. Pure.

PageRank (damping ``d`` = 0.85) by power iteration over distinct links: a
page passes ``d * rank / out_degree`` along each out-link, the rank of pages
without out-links (dangling) is spread over all pages, and ``1 - d`` is
spread uniformly: ``r' = d * (A^T (r / deg) + dangling / n) + (1 - d) / n``.
Iteration stops when the L1 change is below ``tol`` or after
``max_iterations``. HITS (Kleinberg) iterates ``a = A^T h``, ``h = A a`` from
``h = 1``, each normalised to sum 1, to the same tolerance.

The host graph has hosts as nodes and, for every pair of different hosts, an
edge weighted by the number of distinct page links between them. Its
PageRank uses those weights (a host passes rank in proportion to how many
page links go to each other host).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from webgather.analysis.graphops import SimpleGraph, count_values

__all__ = [
    "HostGraph",
    "RankResult",
    "hits",
    "host_graph",
    "pagerank",
    "top_indices",
    "weighted_pagerank",
]


@dataclass(frozen=True)
class RankResult:
    scores: np.ndarray
    iterations: int
    converged: bool


@dataclass(frozen=True)
class HostGraph:
    """Hosts as nodes; weight = distinct page links from one host to another."""

    n_hosts: int
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    pages: np.ndarray
    """Pages per host."""

    @property
    def n_edges(self) -> int:
        return int(self.src.shape[0])

    def matrix(self) -> sp.csr_array:
        shape = (self.n_hosts, self.n_hosts)
        return sp.csr_array((self.weight.astype(np.float64), (self.src, self.dst)), shape=shape)


def top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, best first; ties by lower index."""
    k = min(k, int(scores.shape[0]))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    threshold = scores[part].min()
    pool = np.flatnonzero(scores >= threshold)
    order = np.lexsort((pool, -scores[pool]))
    return pool[order][:k]


def weighted_pagerank(
    matrix: sp.csr_array, *, damping: float = 0.85, tol: float = 1e-10, max_iterations: int = 200
) -> RankResult:
    """PageRank of a weighted adjacency matrix (row = source)."""
    n = matrix.shape[0]
    if n == 0:
        return RankResult(np.zeros(0), 0, True)
    out_weight = np.asarray(matrix.sum(axis=1)).ravel()
    dangling = out_weight == 0
    inverse = np.zeros(n)
    np.divide(1.0, out_weight, out=inverse, where=~dangling)
    transposed = matrix.T.tocsr()
    rank = np.full(n, 1.0 / n)
    for iteration in range(1, max_iterations + 1):
        spread = damping * rank[dangling].sum() / n + (1.0 - damping) / n
        new = damping * (transposed @ (rank * inverse)) + spread
        new /= new.sum()
        change = float(np.abs(new - rank).sum())
        rank = new
        if change < tol:
            return RankResult(rank, iteration, True)
    return RankResult(rank, max_iterations, False)


def pagerank(
    graph: SimpleGraph, *, damping: float = 0.85, tol: float = 1e-10, max_iterations: int = 200
) -> RankResult:
    """PageRank of the page graph (distinct links)."""
    return weighted_pagerank(graph.out, damping=damping, tol=tol, max_iterations=max_iterations)


def hits(graph: SimpleGraph, *, tol: float = 1e-10, max_iterations: int = 200) -> tuple[RankResult, RankResult]:
    """(hubs, authorities), each normalised to sum 1 (all zero if there is no link)."""
    n = graph.n
    hub = np.full(n, 1.0 / max(n, 1))
    authority = np.zeros(n)
    if graph.n_edges == 0:
        zero = RankResult(np.zeros(n), 0, True)
        return zero, zero
    for iteration in range(1, max_iterations + 1):
        authority = graph.inn @ hub
        authority /= authority.sum()
        new_hub = graph.out @ authority
        new_hub /= new_hub.sum()
        change = float(np.abs(new_hub - hub).sum())
        hub = new_hub
        if change < tol:
            return RankResult(hub, iteration, True), RankResult(authority, iteration, True)
    return RankResult(hub, max_iterations, False), RankResult(authority, max_iterations, False)


def host_graph(graph: SimpleGraph, page_host: np.ndarray, n_hosts: int) -> HostGraph:
    """The weighted graph of cross-host page links."""
    hosts = page_host.astype(np.int64, copy=False)
    hs = hosts[graph.src]
    hd = hosts[graph.dst]
    cross = hs != hd
    keys, weight = count_values(hs[cross] * max(n_hosts, 1) + hd[cross])
    pages = np.bincount(hosts, minlength=n_hosts)
    return HostGraph(n_hosts, keys // max(n_hosts, 1), keys % max(n_hosts, 1), weight, pages)
