"""The page graph as compressed sparse rows, and breadth-first search on it. Pure.

:func:`simple_graph` turns a :class:`~webgather.linkgraph.LinkGraph` (link
occurrences, duplicates kept) into a :class:`SimpleGraph`: distinct
``(src, dst)`` pairs without self-links, as forward and reverse CSR matrices
(``float64`` data, ``int32`` indices: what ``scipy.sparse.csgraph`` wants, so
no copy is made per call). Every structural figure (degrees, components,
paths, ranks, cores) is computed on this graph: a page that links to another
twice endorses it once.

No Python loop touches an edge: sorting, ``bincount`` and ``scipy.sparse``
do the work (note: ``numpy.unique`` on tens of millions of values is slow in
numpy 2.x, so :func:`unique_sorted` sorts and compares neighbours instead).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph

__all__ = [
    "SimpleGraph",
    "bfs_layers",
    "check_graph",
    "count_values",
    "reachable",
    "simple_graph",
    "unique_sorted",
]

_MAX_PAGES = 2**31 - 2
"""scipy.sparse.csgraph indexes nodes with int32 (one spare id for a super-source)."""


@dataclass(frozen=True)
class SimpleGraph:
    """Distinct directed page links without self-links, sorted by ``(src, dst)``."""

    n: int
    src: np.ndarray
    """int32 source page ids."""
    dst: np.ndarray
    """int32 destination page ids."""
    out: sp.csr_array
    """n x n adjacency, row = source."""
    inn: sp.csr_array
    """n x n transposed adjacency, row = destination."""

    @property
    def n_edges(self) -> int:
        return int(self.src.shape[0])

    def out_degree(self) -> np.ndarray:
        return np.diff(np.asarray(self.out.indptr, dtype=np.int64))

    def in_degree(self) -> np.ndarray:
        return np.diff(np.asarray(self.inn.indptr, dtype=np.int64))


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values of a 1-d integer array."""
    if values.size == 0:
        return values.copy()
    ordered = np.sort(values)
    keep = np.empty(ordered.shape[0], dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def count_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values ascending, how often each occurs) of a 1-d integer array."""
    if values.size == 0:
        return values.copy(), np.zeros(0, dtype=np.int64)
    ordered = np.sort(values)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[starts], np.diff(np.append(starts, ordered.size))


def check_graph(graph: LinkGraph) -> None:
    """:class:`AnalysisError` unless ids are in range and the arrays are integral."""
    n = graph.n_pages
    if n > _MAX_PAGES:
        raise AnalysisError(f"{n} pages: more than the {_MAX_PAGES} this analysis indexes")
    for name, arr, bound in (
        ("src", graph.src, n),
        ("dst", graph.dst, n),
        ("page_host", graph.page_host, max(graph.n_hosts, 1)),
    ):
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise AnalysisError(f"link graph {name} must be a 1-d integer array")
        if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= bound):
            raise AnalysisError(f"link graph {name} holds ids outside 0..{bound - 1}")
    if n and graph.n_hosts == 0:
        raise AnalysisError("link graph has pages but no hosts")


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> sp.csr_array:
    """CSR from (row, col) pairs already sorted by row then col."""
    if rows.shape[0] > _MAX_PAGES:
        raise AnalysisError(f"{rows.shape[0]} distinct links: more than {_MAX_PAGES} cannot be indexed")
    indptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    data = np.ones(rows.shape[0], dtype=np.float64)
    matrix = sp.csr_array((data, cols.astype(np.int32, copy=False), indptr), shape=(n, n))
    matrix.has_sorted_indices = True
    return matrix


def _int32(matrix: sp.csr_array) -> sp.csr_array:
    matrix.indptr = matrix.indptr.astype(np.int32, copy=False)
    matrix.indices = matrix.indices.astype(np.int32, copy=False)
    return matrix


def simple_graph(graph: LinkGraph) -> SimpleGraph:
    """Distinct links without self-links, as forward and reverse CSR."""
    check_graph(graph)
    n = graph.n_pages
    src = graph.src.astype(np.int64, copy=False)
    dst = graph.dst.astype(np.int64, copy=False)
    keys = src[src != dst] * n + dst[src != dst]
    keys = unique_sorted(keys)
    s = (keys // max(n, 1)).astype(np.int32)
    d = (keys % max(n, 1)).astype(np.int32)
    del keys
    out = _csr(s, d, n)
    inn = _int32(sp.csr_array(out.transpose().tocsr()))
    inn.sort_indices()
    return SimpleGraph(n=n, src=s, dst=d, out=out, inn=inn)


def bfs_layers(adjacency: sp.csr_array, source: int) -> np.ndarray:
    """Number of pages at each distance 0, 1, 2, ... from ``source`` (index = distance).

    scipy's breadth-first order is FIFO, so the pages of one layer are
    contiguous and the positions of their parents never decrease: each
    layer's end is one binary search.
    """
    order, pred = csgraph.breadth_first_order(
        adjacency, source, directed=True, return_predecessors=True
    )
    if order.shape[0] == 1:
        return np.ones(1, dtype=np.int64)
    position = np.empty(adjacency.shape[0], dtype=np.int64)
    position[order] = np.arange(order.shape[0])
    parent_pos = position[pred[order[1:]]]
    bounds = [0, 1]
    while bounds[-1] < order.shape[0]:
        bounds.append(int(np.searchsorted(parent_pos, bounds[-1], side="left")) + 1)
    return np.diff(np.asarray(bounds, dtype=np.int64))


def reachable(adjacency: sp.csr_array, sources: np.ndarray) -> np.ndarray:
    """Boolean mask of pages reachable from any of ``sources`` (sources included).

    One C breadth-first search from a virtual super-source whose row links to
    every source (the matrix gains one row; no edge is copied twice).
    """
    n = adjacency.shape[0]
    mask = np.zeros(n, dtype=bool)
    sources = np.asarray(sources, dtype=np.int32)
    if sources.size == 0:
        return mask
    if sources.size == 1:
        order = csgraph.breadth_first_order(adjacency, int(sources[0]), directed=True, return_predecessors=False)
        mask[order] = True
        return mask
    indptr = np.concatenate([adjacency.indptr, [adjacency.indptr[-1] + sources.size]]).astype(np.int32)
    indices = np.concatenate([adjacency.indices, sources])
    data = np.ones(indices.shape[0], dtype=np.float64)
    extended = sp.csr_array((data, indices, indptr), shape=(n + 1, n + 1))
    order = csgraph.breadth_first_order(extended, n, directed=True, return_predecessors=False)
    mask[order[order < n]] = True
    return mask
