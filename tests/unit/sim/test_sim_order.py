"""PageRank by power iteration and crawl orderings."""

from __future__ import annotations

import numpy as np
import pytest

from webgather.errors import ConfigError
from webgather.sim import order
from webgather.sim.traces import bfs_order

from .conftest import make_graph


def test_pagerank_of_a_cycle_is_uniform() -> None:
    rank = order.pagerank(make_graph([(0, 1), (1, 2), (2, 0)], [0, 0, 0]))
    assert rank == pytest.approx([1 / 3] * 3)


def test_pagerank_matches_the_dense_formula() -> None:
    edges = [(0, 1), (0, 2), (1, 2), (2, 0), (3, 2), (3, 3)]  # page 4 is dangling
    graph = make_graph(edges, [0] * 5)
    n, d = 5, 0.85
    m = np.zeros((n, n))
    for s, t in edges:
        m[t, s] += 1 / sum(1 for a, _ in edges if a == s)
    m[:, 4] = 1 / n  # dangling page spreads evenly
    google = d * m + (1 - d) / n
    values, vectors = np.linalg.eig(google)
    expected = np.real(vectors[:, np.argmax(np.real(values))])
    expected /= expected.sum()
    assert order.pagerank(graph) == pytest.approx(expected, abs=1e-8)


def test_bfs_ordering_equals_the_fifo_order() -> None:
    edges = [(0, 2), (0, 1), (1, 3), (2, 3), (2, 4), (4, 0), (3, 5)]
    graph = make_graph(edges, [0] * 6)
    rng = np.random.default_rng(0)
    for batch in (1, 2, 100):
        assert list(order.crawl_order(graph, "bfs", [0], batch, rng)) == list(bfs_order(graph, [0]))


def test_oracle_collects_rank_at_least_as_fast_as_bfs() -> None:
    rng = np.random.default_rng(3)
    n = 300
    popular = rng.zipf(1.8, 3000) % n
    edges = [(int(s), int(t)) for s, t in zip(rng.integers(0, n, 3000), popular)]
    edges += [(0, i) for i in range(1, n, 7)]
    graph = make_graph(edges, [0] * n)
    result = order.run(graph, [0], batch=5, seed=1)
    for curve in result.curves.values():
        assert np.all(np.diff(curve) >= 0)
    first_tenth = {k: c[len(c) // 10] for k, c in result.curves.items()}
    assert first_tenth["pagerank"] >= first_tenth["bfs"]
    assert first_tenth["pagerank"] >= first_tenth["random"]
    assert "opic" in order.table(result)


def test_order_errors() -> None:
    graph = make_graph([(0, 1)], [0, 0])
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError):
        order.crawl_order(graph, "dfs", [0], 1, rng)
    with pytest.raises(ConfigError):
        order.crawl_order(graph, "bfs", [0], 0, rng)
