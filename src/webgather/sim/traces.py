"""Adjacency, breadth-first crawl order and URL traces of a link graph. Pure, vectorized.

* :func:`adjacency` turns the edge arrays into CSR form (out-links of each page
  in the order the producer listed them, which is their order on the page).
* :func:`bfs_order` is the FIFO crawl order from seeds: exactly the order a
  single breadth-first crawler fetches pages (parents in order, each parent's
  links in page order), computed level by level with numpy. Only pages marked
  ``fetched`` are expanded (a crawl's link log knows no out-links of the rest).
* :func:`page_keys` gives each page a 64-bit key: the fingerprint of its URL when
  the graph has it (the same key a crawl's seen-set uses), else a SplitMix64
  hash of the page id (distinct per page, which is all a cache study needs).
* :func:`crawl_order` and :func:`crawl_seeds` recover the fetch order and the
  seeds of a *recorded* crawl (page ids of a link-log graph are not in crawl order).
* :func:`discovery_trace` is the stream of seen-tests a crawler makes: every
  out-link occurrence (duplicates within a page kept) of the pages in crawl
  order. :func:`link_log_trace` is the same stream read from a recorded crawl,
  whose link log is already in crawl order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph
from webgather.urls import fingerprints

__all__ = [
    "Adjacency",
    "adjacency",
    "bfs_order",
    "crawl_order",
    "crawl_seeds",
    "default_seeds",
    "discovery_trace",
    "gather",
    "link_log_trace",
    "name_keys",
    "page_keys",
    "splitmix64",
]

IntArray = NDArray[np.int64]
U64Array = NDArray[np.uint64]


@dataclass(frozen=True)
class Adjacency:
    """Out-links in CSR form: links of page ``p`` are ``indices[indptr[p]:indptr[p+1]]``."""

    indptr: IntArray
    indices: IntArray

    @property
    def n_pages(self) -> int:
        return int(self.indptr.shape[0] - 1)

    def out_degree(self) -> IntArray:
        return np.diff(self.indptr)


def adjacency(graph: LinkGraph) -> Adjacency:
    """CSR out-adjacency; a link's position among its page's links is kept (stable sort)."""
    src = np.asarray(graph.src, dtype=np.int64)
    dst = np.asarray(graph.dst, dtype=np.int64)
    n = graph.n_pages
    if src.size and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= n):
        raise AnalysisError(f"link endpoints must be page ids in 0..{n - 1}")
    order = np.argsort(src, kind="stable")
    counts = np.bincount(src, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Adjacency(indptr, dst[order])


def gather(adj: Adjacency, pages: IntArray) -> tuple[IntArray, IntArray]:
    """Out-links of ``pages`` concatenated in order, and the position of each link's source."""
    starts = adj.indptr[pages]
    lens = adj.indptr[pages + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    owner = np.repeat(np.arange(pages.shape[0], dtype=np.int64), lens)
    first = np.cumsum(lens) - lens
    positions = starts[owner] + (np.arange(total, dtype=np.int64) - first[owner])
    return adj.indices[positions], owner


def _first_occurrences(values: IntArray) -> IntArray:
    """Distinct values in order of first occurrence."""
    if values.size == 0:
        return values
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def bfs_order(graph: LinkGraph, seeds: Sequence[int] | IntArray, adj: Adjacency | None = None) -> IntArray:
    """Pages in FIFO breadth-first fetch order from ``seeds`` (reachable pages only)."""
    adj = adj if adj is not None else adjacency(graph)
    seed_arr = np.asarray(seeds, dtype=np.int64)
    if seed_arr.size == 0:
        raise AnalysisError("a crawl order needs at least one seed page")
    if seed_arr.min() < 0 or seed_arr.max() >= graph.n_pages:
        raise AnalysisError(f"seed pages must be in 0..{graph.n_pages - 1}")
    fetched = np.asarray(graph.fetched, dtype=bool)
    seen = np.zeros(graph.n_pages, dtype=bool)
    frontier = _first_occurrences(seed_arr)
    seen[frontier] = True
    levels: list[IntArray] = []
    while frontier.size:
        levels.append(frontier)
        links, _ = gather(adj, frontier[fetched[frontier]])
        fresh = _first_occurrences(links[~seen[links]])
        seen[fresh] = True
        frontier = fresh
    return np.concatenate(levels)


def default_seeds(graph: LinkGraph, n_hosts: int = 1) -> IntArray:
    """The lowest-numbered page of each of the first ``n_hosts`` hosts (a host's front page
    in the synthetic web, the first page a crawl saw of it in a link log)."""
    if graph.n_pages == 0:
        raise AnalysisError("the graph has no pages")
    hosts = np.asarray(graph.page_host, dtype=np.int64)
    first_of_host = np.full(graph.n_hosts, -1, dtype=np.int64)
    # reversed so the lowest page id of each host is written last
    first_of_host[hosts[::-1]] = np.arange(graph.n_pages - 1, -1, -1, dtype=np.int64)
    present = first_of_host[first_of_host >= 0]
    return np.sort(present)[: max(1, n_hosts)]


def splitmix64(values: NDArray[np.integer]) -> U64Array:
    """SplitMix64 finalizer, vectorized: a fixed bijective 64-bit mix of integers."""
    with np.errstate(over="ignore"):
        z = np.asarray(values).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return np.asarray(z ^ (z >> np.uint64(31)), dtype=np.uint64)


def name_keys(names: Sequence[str] | None, count: int) -> U64Array:
    """Fingerprints of names; a missing (``""``) or absent name gets a hash of its index.

    A crawl's link graph names only the pages and hosts it saw a URL for; the
    others must still get distinct keys, not all the fingerprint of ``""``.
    """
    by_index = splitmix64(np.arange(count, dtype=np.int64))
    if names is None:
        return by_index
    keys = fingerprints(names)
    missing = np.fromiter((not n for n in names), dtype=bool, count=count)
    return np.asarray(np.where(missing, by_index, keys), dtype=np.uint64)


def page_keys(graph: LinkGraph) -> U64Array:
    """64-bit key of every page: URL fingerprint if its URL is known, else a hash of the id."""
    return name_keys(graph.urls, graph.n_pages)


def crawl_order(graph: LinkGraph) -> IntArray:
    """Fetched pages of a recorded crawl in fetch order: first appearance as a link source
    in the link log (which is written in crawl order), then fetched pages without links."""
    src = np.asarray(graph.src, dtype=np.int64)
    _, first = np.unique(src, return_index=True)
    with_links = src[np.sort(first)]
    fetched = np.asarray(graph.fetched, dtype=bool)
    rest = np.setdiff1d(np.flatnonzero(fetched), with_links, assume_unique=True)
    order = np.concatenate([with_links[fetched[with_links]], rest])
    if order.size == 0:
        raise AnalysisError("the crawl fetched no pages")
    return order


def crawl_seeds(graph: LinkGraph) -> IntArray:
    """Likely seeds of a recorded crawl: fetched pages no logged link points to
    (seeds and sitemap entries); the first fetched page if there are none."""
    indegree = np.bincount(np.asarray(graph.dst, dtype=np.int64), minlength=graph.n_pages)
    seeds = np.flatnonzero(np.asarray(graph.fetched, dtype=bool) & (indegree == 0))
    return seeds if seeds.size else crawl_order(graph)[:1]


def discovery_trace(
    graph: LinkGraph, order: IntArray, adj: Adjacency | None = None, keys: U64Array | None = None
) -> U64Array:
    """Keys of every out-link of the pages in ``order``, concatenated: the seen-test stream."""
    adj = adj if adj is not None else adjacency(graph)
    keys = keys if keys is not None else page_keys(graph)
    order = np.asarray(order, dtype=np.int64)
    links, _ = gather(adj, order[np.asarray(graph.fetched, dtype=bool)[order]])
    return np.asarray(keys[links], dtype=np.uint64)


def link_log_trace(graph: LinkGraph, keys: U64Array | None = None) -> U64Array:
    """The seen-test stream of a recorded crawl: its links' targets in link-log order."""
    keys = keys if keys is not None else page_keys(graph)
    return np.asarray(keys[np.asarray(graph.dst, dtype=np.int64)], dtype=np.uint64)
