"""Average shortest-path length and a diameter lower bound by sampled BFS. Pure.

Sources are drawn uniformly without replacement (seeded) from the pages with
at least one out-link; each source runs one directed breadth-first search
over distinct links (:func:`~webgather.analysis.graphops.bfs_layers`). For
source ``s``, ``D_s`` is the sum of its distances to the pages it reaches and
``N_s`` how many it reaches (itself excluded). The estimate of the mean
shortest-path length over connected ordered pairs is the ratio
``sum D_s / sum N_s``; its standard error is the ratio estimator's
(``sqrt((1 - k/K) * s^2 / k) / mean(N_s)`` with ``s^2`` the sample variance
of ``D_s - R * N_s``; ``k`` sources out of ``K``), which is 0 when every
source is used and the figure is exact. The largest distance any search saw
is a lower bound on the diameter (the largest finite eccentricity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from webgather.analysis.graphops import SimpleGraph, bfs_layers

__all__ = ["PathStats", "sampled_paths"]


@dataclass(frozen=True)
class PathStats:
    """Sampled shortest-path figures."""

    sources: int
    """BFS sources used (k)."""
    population: int
    """Pages with an out-link that could have been sources (K)."""
    pairs: int
    """Connected (source, target) pairs seen."""
    mean_distance: float
    """Mean shortest-path length over connected pairs (nan if none)."""
    stderr: float
    diameter_lower_bound: int
    distance_histogram: list[int]
    """Pairs at distance 1, 2, ... (index 0 is distance 1)."""
    mean_reached_share: float
    """Average share of all pages a source reaches."""


def _ratio_stderr(d: np.ndarray, m: np.ndarray, ratio: float, population: int) -> float:
    k = d.shape[0]
    if k < 2 or m.mean() == 0:
        return 0.0 if k == population else math.nan
    residual = d - ratio * m
    s2 = float(residual.var(ddof=1))
    fpc = max(0.0, 1.0 - k / population)
    return math.sqrt(fpc * s2 / k) / float(m.mean())


def sampled_paths(graph: SimpleGraph, sample: int, rng: np.random.Generator) -> PathStats:
    """BFS from ``sample`` random pages (all of them if fewer): mean distance and more."""
    candidates = np.flatnonzero(graph.out_degree() > 0)
    k = min(int(sample), int(candidates.size))
    chosen = np.sort(rng.choice(candidates, size=k, replace=False)) if k else candidates[:0]
    totals = np.zeros(k, dtype=np.float64)
    reached = np.zeros(k, dtype=np.float64)
    histogram = np.zeros(1, dtype=np.int64)
    for i, source in enumerate(chosen):
        layers = bfs_layers(graph.out, int(source))[1:]
        if layers.size > histogram.size:
            histogram = np.pad(histogram, (0, layers.size - histogram.size))
        histogram[: layers.size] += layers
        distances = np.arange(1, layers.size + 1)
        totals[i] = float(layers @ distances)
        reached[i] = float(layers.sum())
    pairs = int(reached.sum())
    mean = float(totals.sum() / pairs) if pairs else math.nan
    nonzero = np.flatnonzero(histogram)
    return PathStats(
        sources=k,
        population=int(candidates.size),
        pairs=pairs,
        mean_distance=mean,
        stderr=_ratio_stderr(totals, reached, mean, int(candidates.size)) if pairs else math.nan,
        diameter_lower_bound=int(nonzero[-1]) + 1 if nonzero.size else 0,
        distance_histogram=[int(c) for c in histogram[: (nonzero[-1] + 1) if nonzero.size else 0]],
        mean_reached_share=float(reached.mean() / graph.n) if k and graph.n else 0.0,
    )
