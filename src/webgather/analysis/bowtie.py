"""Strongly connected components and the bow-tie regions (Broder et al. 2000). Pure.

On the page graph (:class:`~webgather.analysis.graphops.SimpleGraph`):

* CORE: the largest strongly connected component (ties: the one holding the
  lowest page id);
* IN: pages that reach the core and are not in it;
* OUT: pages the core reaches, not in it;
* TUBES: pages reached from IN and reaching OUT, in none of the above;
* TENDRILS: the rest of the core's weakly connected component. Broder's
  figures count them this way (the residue of the weak component), and
  ``tendrils_strict`` counts only the pages reached from IN or reaching OUT
  (the textbook picture), so nothing is hidden;
* DISCONNECTED: pages outside the core's weakly connected component.

The regions partition the pages. Components come from
``scipy.sparse.csgraph.connected_components`` and reachability from C
breadth-first searches (:func:`~webgather.analysis.graphops.reachable`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csgraph

from webgather.analysis.graphops import SimpleGraph, reachable

__all__ = ["REGIONS", "BowTie", "Components", "bow_tie", "region_labels"]

REGIONS = ("core", "in", "out", "tubes", "tendrils", "disconnected")


@dataclass(frozen=True)
class BowTie:
    """Region sizes (pages) and the component statistics behind them."""

    n_pages: int
    n_scc: int
    largest_scc_sizes: list[int]
    """The ten largest strongly connected components, largest first."""
    n_wcc: int
    largest_wcc: int
    core: int
    in_: int
    out: int
    tubes: int
    tendrils: int
    tendrils_strict: int
    disconnected: int

    def sizes(self) -> dict[str, int]:
        """Region -> pages, in :data:`REGIONS` order."""
        return {
            "core": self.core,
            "in": self.in_,
            "out": self.out,
            "tubes": self.tubes,
            "tendrils": self.tendrils,
            "disconnected": self.disconnected,
        }


@dataclass(frozen=True)
class Components:
    """Strong and weak component counts."""

    n_scc: int
    largest_scc_sizes: list[int]
    n_wcc: int
    largest_wcc: int


def _core_mask(graph: SimpleGraph) -> tuple[np.ndarray, int, list[int]]:
    n_scc, scc = csgraph.connected_components(graph.out, directed=True, connection="strong")
    sizes = np.bincount(scc)
    largest = np.flatnonzero(sizes == sizes.max())
    first_page = int(np.flatnonzero(np.isin(scc, largest))[0])
    top = np.sort(sizes)[::-1][:10]
    return scc == scc[first_page], int(n_scc), [int(s) for s in top]


def region_labels(graph: SimpleGraph) -> tuple[np.ndarray, np.ndarray, Components]:
    """(region index per page into :data:`REGIONS`, strict-tendril mask, component stats)."""
    n = graph.n
    labels = np.full(n, REGIONS.index("disconnected"), dtype=np.int8)
    strict = np.zeros(n, dtype=bool)
    if n == 0:
        return labels, strict, Components(0, [], 0, 0)
    core, n_scc, top = _core_mask(graph)
    anchor = np.flatnonzero(core)[:1]
    out = reachable(graph.out, anchor) & ~core
    inn = reachable(graph.inn, anchor) & ~core
    known = core | out | inn
    from_in = reachable(graph.out, np.flatnonzero(inn)) & ~known
    to_out = reachable(graph.inn, np.flatnonzero(out)) & ~known
    n_wcc, wcc = csgraph.connected_components(graph.out, directed=True, connection="weak")
    labels[wcc == wcc[anchor[0]]] = REGIONS.index("tendrils")
    labels[from_in & to_out] = REGIONS.index("tubes")
    labels[inn] = REGIONS.index("in")
    labels[out] = REGIONS.index("out")
    labels[core] = REGIONS.index("core")
    strict[from_in ^ to_out] = True
    stats = Components(int(n_scc), top, int(n_wcc), int(np.bincount(wcc).max()))
    return labels, strict, stats


def bow_tie(graph: SimpleGraph) -> BowTie:
    """The bow-tie region sizes of the page graph."""
    labels, strict, stats = region_labels(graph)
    counts = np.bincount(labels, minlength=len(REGIONS))
    by_name = {name: int(counts[i]) for i, name in enumerate(REGIONS)}
    return BowTie(
        n_pages=graph.n,
        n_scc=stats.n_scc,
        largest_scc_sizes=stats.largest_scc_sizes,
        n_wcc=stats.n_wcc,
        largest_wcc=stats.largest_wcc,
        core=by_name["core"],
        in_=by_name["in"],
        out=by_name["out"],
        tubes=by_name["tubes"],
        tendrils=by_name["tendrils"],
        tendrils_strict=int(np.count_nonzero(strict)),
        disconnected=by_name["disconnected"],
    )
