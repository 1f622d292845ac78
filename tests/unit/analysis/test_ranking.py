"""PageRank, HITS and the host graph against pure-Python power iteration."""

from __future__ import annotations

import random

import numpy as np

from webgather.analysis.graphops import simple_graph
from webgather.analysis.ranking import hits, host_graph, pagerank, top_indices, weighted_pagerank

from .reference import adjacency, random_graph
from .reference import hits as hits_ref
from .reference import pagerank as pagerank_ref


def test_pagerank_matches_power_iteration() -> None:
    rng = random.Random(21)
    for _ in range(20):
        n = rng.randint(1, 30)
        g = random_graph(rng, n, rng.randint(0, 3 * n))
        result = pagerank(simple_graph(g))
        assert result.converged
        np.testing.assert_allclose(result.scores, pagerank_ref(adjacency(g)), atol=1e-9)
        assert abs(result.scores.sum() - 1.0) < 1e-12


def test_hits_matches_power_iteration() -> None:
    rng = random.Random(22)
    for _ in range(20):
        n = rng.randint(2, 30)
        g = random_graph(rng, n, rng.randint(1, 3 * n))
        hub, authority = hits(simple_graph(g), tol=1e-13, max_iterations=2000)
        ref_hub, ref_auth = hits_ref(adjacency(g), iterations=2000)
        np.testing.assert_allclose(hub.scores, ref_hub, atol=1e-6)
        np.testing.assert_allclose(authority.scores, ref_auth, atol=1e-6)


def test_hits_on_a_star_and_without_links() -> None:
    from webgather.linkgraph import LinkGraph

    g = LinkGraph(np.array([1, 2, 3]), np.array([0, 0, 0]), np.zeros(4, np.int64), ("h",), np.ones(4, bool))
    hub, authority = hits(simple_graph(g))
    assert authority.scores.tolist() == [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(hub.scores, [0, 1 / 3, 1 / 3, 1 / 3])
    empty = LinkGraph(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(2, np.int64), ("h",), np.ones(2, bool))
    hub, authority = hits(simple_graph(empty))
    assert hub.scores.tolist() == [0.0, 0.0] and authority.scores.tolist() == [0.0, 0.0]


def test_host_graph_weights_and_host_pagerank() -> None:
    rng = random.Random(23)
    for _ in range(15):
        g = random_graph(rng, rng.randint(2, 40), rng.randint(0, 120), n_hosts=4)
        hosts = g.page_host.tolist()
        expected: dict[tuple[int, int], int] = {}
        for s, outs in enumerate(adjacency(g)):
            for d in outs:
                if hosts[s] != hosts[d]:
                    expected[(hosts[s], hosts[d])] = expected.get((hosts[s], hosts[d]), 0) + 1
        hg = host_graph(simple_graph(g), g.page_host, 4)
        got = {(int(a), int(b)): int(w) for a, b, w in zip(hg.src, hg.dst, hg.weight)}
        assert got == expected
        assert hg.pages.tolist() == [hosts.count(h) for h in range(4)]
        # weighted PageRank = unweighted PageRank of the multigraph with w parallel links
        adj_weights = [[0.0] * 4 for _ in range(4)]
        for (a, b), w in expected.items():
            adj_weights[a][b] = w
        ranks = weighted_pagerank(hg.matrix()).scores
        np.testing.assert_allclose(ranks, _weighted_reference(adj_weights), atol=1e-9)


def _weighted_reference(weights: list[list[float]], damping: float = 0.85) -> list[float]:
    n = len(weights)
    rank = [1.0 / n] * n
    for _ in range(500):
        dangling = sum(rank[v] for v in range(n) if sum(weights[v]) == 0)
        new = [(1 - damping) / n + damping * dangling / n] * n
        for v in range(n):
            total = sum(weights[v])
            for w in range(n):
                if weights[v][w]:
                    new[w] += damping * rank[v] * weights[v][w] / total
        rank = new
    return rank


def test_top_indices_orders_by_score_then_index() -> None:
    scores = np.array([0.1, 0.5, 0.5, 0.2, 0.5])
    assert top_indices(scores, 2).tolist() == [1, 2]
    assert top_indices(scores, 4).tolist() == [1, 2, 4, 3]
    assert top_indices(scores, 10).tolist() == [1, 2, 4, 3, 0]
    assert top_indices(np.zeros(0), 3).size == 0
