"""Crawl orderings compared by the share of total PageRank collected. Pure.

PageRank is computed once, on the whole graph, by power iteration with
``scipy.sparse`` (damping 0.85; a page without out-links spreads its rank
evenly over all pages; duplicate links count once per occurrence). Each
ordering then simulates a crawler that starts from the seeds and, in steps of
``batch`` pages (the parallel crawlers' superstep: take the top R of the queue),
fetches the highest-priority discovered pages; a fetched page's out-links become
discovered. Priorities:

* ``bfs``        discovery order (first discovered first): plain breadth-first.
* ``indegree``   number of links to the page seen so far in fetched pages (backlink count).
* ``opic``       OPIC cash (Abiteboul et al.): seeds start with equal cash; a fetched
  page's cash is split evenly over its out-links (a page without out-links keeps
  none: its cash leaves the system, which changes no ordering among the others)
  and set to 0; priority is the cash a discovered page holds.
* ``pagerank``   the true PageRank (an oracle: the best a rank-guided crawler can do).
* ``random``     a seeded random choice among discovered pages (a baseline).

The curve is the cumulative PageRank (as a share of the total over *all* pages)
against the number of pages fetched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from webgather.errors import AnalysisError, ConfigError
from webgather.linkgraph import LinkGraph
from webgather.sim.tables import render
from webgather.sim.traces import Adjacency, adjacency, gather

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ORDERS", "OrderResult", "crawl_order", "pagerank", "plot", "run", "table"]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
ORDERS = ("bfs", "indegree", "opic", "pagerank", "random")


def pagerank(graph: LinkGraph, damping: float = 0.85, tol: float = 1e-10,
             max_iter: int = 200) -> FloatArray:
    """PageRank of every page (sums to 1) by power iteration."""
    n = graph.n_pages
    if n == 0:
        raise AnalysisError("the graph has no pages")
    if not 0.0 < damping < 1.0:
        raise ConfigError(f"damping must be in (0, 1), got {damping}")
    src = np.asarray(graph.src, dtype=np.int64)
    dst = np.asarray(graph.dst, dtype=np.int64)
    out_deg = np.bincount(src, minlength=n).astype(np.float64)
    weights = 1.0 / out_deg[src]
    # M[dst, src] = 1 / outdeg(src); duplicates are summed by the COO -> CSR conversion.
    matrix = sp.csr_matrix((weights, (dst, src)), shape=(n, n))
    dangling = out_deg == 0
    rank = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        spread = damping * rank[dangling].sum() / n + (1.0 - damping) / n
        new = damping * (matrix @ rank) + spread
        new /= new.sum()
        if np.abs(new - rank).sum() < tol:
            return np.asarray(new, dtype=np.float64)
        rank = new
    return np.asarray(rank, dtype=np.float64)


@dataclass
class _State:
    discovered: NDArray[np.bool_]
    fetched: NDArray[np.bool_]
    priority: FloatArray


def _expand(order: str, adj: Adjacency, pages: IntArray, state: _State, clock: int,
            cash: FloatArray) -> None:
    """Discover the out-links of freshly fetched ``pages`` and update priorities."""
    links, owner = gather(adj, pages)
    new = links[~state.discovered[links]]
    if new.size:
        _, first = np.unique(new, return_index=True)
        fresh = new[np.sort(first)]
        state.discovered[fresh] = True
        if order == "bfs":  # earlier discovery = higher priority
            state.priority[fresh] = -(clock + np.arange(fresh.size, dtype=np.float64))
    if order == "indegree":
        np.add.at(state.priority, links, 1.0)
    elif order == "opic":  # state.priority is the cash array itself
        deg = adj.out_degree()[pages].astype(np.float64)
        gift = cash[pages] / np.maximum(deg, 1.0)
        cash[pages] = 0.0
        np.add.at(cash, links, gift[owner])


def crawl_order(graph: LinkGraph, order: str, seeds: Sequence[int] | IntArray, batch: int,
                rng: np.random.Generator, rank: FloatArray | None = None) -> IntArray:
    """Pages in the order ``order`` fetches them (reachable pages only)."""
    if order not in ORDERS:
        raise ConfigError(f"unknown crawl order {order!r}; choose from {ORDERS}")
    if batch < 1:
        raise ConfigError(f"batch must be >= 1, got {batch}")
    adj = adjacency(graph)
    n = graph.n_pages
    seed_arr = np.unique(np.asarray(seeds, dtype=np.int64))
    if seed_arr.size == 0 or seed_arr.min() < 0 or seed_arr.max() >= n:
        raise AnalysisError(f"seed pages must be a non-empty subset of 0..{n - 1}")
    state = _State(np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n))
    state.discovered[seed_arr] = True
    cash = np.zeros(n)
    cash[seed_arr] = 1.0 / seed_arr.size
    if order == "pagerank":
        state.priority[:] = rank if rank is not None else pagerank(graph)
    elif order == "random":
        state.priority[:] = rng.random(n)
    elif order == "opic":
        state.priority = cash
    elif order == "bfs":
        state.priority[seed_arr] = -np.arange(seed_arr.size, dtype=np.float64)
    expandable = np.asarray(graph.fetched, dtype=bool)
    done: list[IntArray] = []
    clock = seed_arr.size
    while True:
        candidates = np.flatnonzero(state.discovered & ~state.fetched)
        if candidates.size == 0:
            break
        take = min(batch, candidates.size)
        top = np.argpartition(-state.priority[candidates], take - 1)[:take]
        pages = candidates[top[np.argsort(-state.priority[candidates[top]], kind="stable")]]
        state.fetched[pages] = True
        done.append(pages)
        _expand(order, adj, pages[expandable[pages]], state, clock, cash)
        clock = int(state.discovered.sum())
    return np.concatenate(done)


@dataclass(frozen=True)
class OrderResult:
    curves: dict[str, FloatArray]
    """Per order: cumulative PageRank share after each fetched page."""
    n_pages: int
    n_reachable: int
    batch: int


def run(graph: LinkGraph, seeds: Sequence[int] | IntArray, orders: Sequence[str] = ORDERS,
        batch: int = 100, seed: int = 0) -> OrderResult:
    """Every ordering's cumulative-PageRank curve."""
    rank = pagerank(graph)
    curves: dict[str, FloatArray] = {}
    for order in orders:
        fetched = crawl_order(graph, order, seeds, batch, np.random.default_rng(seed), rank)
        curves[order] = np.cumsum(rank[fetched])
    reachable = max((c.size for c in curves.values()), default=0)
    return OrderResult(curves, graph.n_pages, reachable, batch)


def table(result: OrderResult, fractions: Sequence[float] = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0)) -> str:
    """Share of total PageRank collected after a fraction of the reachable pages."""
    rows = []
    for order, curve in result.curves.items():
        at = [curve[max(0, int(round(f * curve.size)) - 1)] for f in fractions]
        rows.append([order] + [float(v) for v in at])
    headers = ["order"] + [f"{f:.0%} fetched" for f in fractions]
    return render(headers, rows, f"order: PageRank share collected ({result.n_reachable:,} of "
                  f"{result.n_pages:,} pages reachable; batch {result.batch})")


def plot(result: OrderResult, fig: Figure) -> None:
    """Cumulative PageRank share against pages fetched."""
    ax = fig.subplots()
    for order, curve in result.curves.items():
        ax.plot(np.arange(1, curve.size + 1), curve, label=order)
    ax.set_xlabel("pages fetched")
    ax.set_ylabel("share of total PageRank")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.suptitle("Crawl order: PageRank collected")
