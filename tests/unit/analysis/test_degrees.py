"""Degrees, effective in-degree and the power-law fit."""

from __future__ import annotations

import random

import numpy as np
import pytest

from webgather.analysis.degrees import (
    degree_histogram,
    degree_stats,
    effective_in_degree,
    fit_power_law,
    min_tail,
)
from webgather.analysis.graphops import simple_graph
from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph

from .reference import adjacency, random_graph, reverse


def _effective_reference(graph: LinkGraph) -> list[int]:
    rev = reverse(adjacency(graph))
    hosts = graph.page_host.tolist()
    result = []
    for page, sources in enumerate(rev):
        per_host: dict[int, int] = {}
        for s in sources:
            if hosts[s] != hosts[page]:
                per_host[hosts[s]] = per_host.get(hosts[s], 0) + 1
        result.append(sum(min(c, 10) for c in per_host.values()))
    return result


def test_degrees_and_effective_in_degree_match_reference() -> None:
    rng = random.Random(5)
    for _ in range(25):
        g = random_graph(rng, rng.randint(1, 40), rng.randint(0, 200), n_hosts=rng.randint(1, 5))
        sg = simple_graph(g)
        adj = adjacency(g)
        assert sg.out_degree().tolist() == [len(a) for a in adj]
        assert sg.in_degree().tolist() == [len(r) for r in reverse(adj)]
        assert effective_in_degree(sg, g.page_host).tolist() == _effective_reference(g)


def test_effective_in_degree_caps_one_host_at_ten() -> None:
    # page 0 on host 0; 15 pages of host 1 and 3 of host 2 link to it, and 4 of its own host
    hosts = [0] + [1] * 15 + [2] * 3 + [0] * 4
    src = list(range(1, 23)) + [1]  # a duplicate link from page 1 counts once
    g = LinkGraph(np.array(src), np.zeros(len(src), np.int64), np.array(hosts), ("a", "b", "c"), np.ones(23, bool))
    sg = simple_graph(g)
    assert sg.in_degree()[0] == 22
    assert effective_in_degree(sg, g.page_host)[0] == 10 + 3


def test_histogram() -> None:
    assert degree_histogram(np.array([0, 2, 2, 5])) == [(0, 1), (2, 2), (5, 1)]
    assert degree_histogram(np.zeros(0, np.int64)) == []


def _graph_with_in_degrees(degrees: np.ndarray) -> LinkGraph:
    """Targets 0..n-1 with exactly the given in-degrees, from a pool of source pages."""
    n, pool = degrees.size, int(degrees.max())
    dst = np.repeat(np.arange(n), degrees)
    starts = np.cumsum(degrees) - degrees
    src = n + np.arange(dst.size) - np.repeat(starts, degrees)
    pages = n + pool
    return LinkGraph(src, dst, np.zeros(pages, np.int64), ("h",), np.ones(pages, bool))


def test_power_law_exponent_is_recovered_within_0_05() -> None:
    rng = np.random.default_rng(11)
    degrees = rng.zipf(2.5, 20_000)  # P(k) ~ k^-2.5 for k >= 1, exactly
    graph = _graph_with_in_degrees(degrees)
    sg = simple_graph(graph)
    assert sorted(sg.in_degree()[: degrees.size].tolist()) == sorted(degrees.tolist())
    stats = degree_stats("in", sg.in_degree(), np.random.default_rng(0))
    fit = stats.fit
    assert fit is not None
    assert abs(fit.alpha - 2.5) < 0.05
    assert fit.n_total == degrees.size and fit.n_values == degrees.size
    assert 0 <= fit.ks_distance < 0.05
    assert fit.alpha_stderr > 0 and fit.n_tail >= min_tail(degrees.size)
    assert 0.0 <= fit.lognormal_p <= 1.0


def test_fit_uses_a_seeded_sample_when_there_are_too_many_values() -> None:
    values = np.random.default_rng(3).zipf(2.2, 5_000)
    a = fit_power_law(values, np.random.default_rng(1), max_values=1_000)
    b = fit_power_law(values, np.random.default_rng(1), max_values=1_000)
    assert a is not None and a == b
    assert a.n_values == 1_000 and a.n_total == 5_000
    assert abs(a.alpha - 2.2) < 0.25


def test_no_fit_for_too_few_or_constant_values() -> None:
    rng = np.random.default_rng(0)
    assert fit_power_law(np.array([1, 2, 3, 0, 0]), rng) is None
    assert fit_power_law(np.full(100, 4), rng) is None
    stats = degree_stats("empty", np.zeros(0, np.int64), rng)
    assert stats.fit is None and stats.mean == 0.0 and stats.histogram == []


def test_a_failed_fit_is_an_analysis_error_and_a_note() -> None:
    values = np.array([1] * 12 + [3] * 10 + [4] * 3)  # no x_min candidate above 1 leaves 10 values
    with pytest.raises(AnalysisError, match="power-law fit failed"):
        fit_power_law(values, np.random.default_rng(0))
    stats = degree_stats("odd", values, np.random.default_rng(0))
    assert stats.fit is None and "power-law fit failed" in stats.fit_note
    assert "fewer than 10" in degree_stats("few", np.array([1, 2, 3]), np.random.default_rng(0)).fit_note
