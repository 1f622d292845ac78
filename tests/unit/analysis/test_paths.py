"""Sampled shortest paths against all-pairs BFS."""

from __future__ import annotations

import math
import random

import numpy as np

from webgather.analysis.graphops import simple_graph
from webgather.analysis.paths import sampled_paths

from .reference import adjacency, bfs, random_graph


def _all_pairs(adj: list[set[int]]) -> tuple[float, int, list[int]]:
    """(mean distance over connected ordered pairs, max distance, pairs per distance)."""
    distances = [d for s in range(len(adj)) if adj[s] for t, d in bfs(adj, [s]).items() if t != s]
    if not distances:
        return math.nan, 0, []
    return sum(distances) / len(distances), max(distances), np.bincount(distances)[1:].tolist()


def test_every_source_gives_the_exact_figures() -> None:
    rng = random.Random(11)
    for _ in range(30):
        n = rng.randint(2, 35)
        g = random_graph(rng, n, rng.randint(1, 3 * n))
        adj = adjacency(g)
        mean, diameter, histogram = _all_pairs(adj)
        stats = sampled_paths(simple_graph(g), sample=10_000, rng=np.random.default_rng(0))
        assert stats.sources == stats.population == sum(1 for a in adj if a)
        if math.isnan(mean):
            assert stats.pairs == 0 and math.isnan(stats.mean_distance)
            continue
        assert math.isclose(stats.mean_distance, mean, rel_tol=1e-12)
        assert stats.stderr == 0.0  # every source used: the figure is exact
        assert stats.diameter_lower_bound == diameter
        assert stats.distance_histogram == histogram
        assert stats.pairs == sum(histogram)


def test_a_sample_is_seeded_and_brackets_the_truth() -> None:
    rng = random.Random(12)
    g = random_graph(rng, 300, 900)
    mean, diameter, _ = _all_pairs(adjacency(g))
    sg = simple_graph(g)
    a = sampled_paths(sg, 40, np.random.default_rng(5))
    b = sampled_paths(sg, 40, np.random.default_rng(5))
    assert a == b
    assert a.sources == 40 and a.population > 40
    assert 0 < a.stderr < 0.5
    assert abs(a.mean_distance - mean) < 4 * a.stderr + 1e-9
    assert a.diameter_lower_bound <= diameter


def test_path_graph_distances() -> None:
    from webgather.linkgraph import LinkGraph

    n = 6  # 0 -> 1 -> ... -> 5: pairs at distance d: n - d
    g = LinkGraph(np.arange(n - 1), np.arange(1, n), np.zeros(n, np.int64), ("h",), np.ones(n, bool))
    stats = sampled_paths(simple_graph(g), 100, np.random.default_rng(0))
    assert stats.distance_histogram == [5, 4, 3, 2, 1]
    assert stats.diameter_lower_bound == 5
    assert math.isclose(stats.mean_distance, 35 / 15)
