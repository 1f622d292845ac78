"""Distinct-link CSR and BFS against pure-Python references."""

from __future__ import annotations

import random

import numpy as np
import pytest

from webgather.analysis.graphops import bfs_layers, count_values, reachable, simple_graph, unique_sorted
from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph

from .reference import adjacency, bfs, random_graph, reverse


def test_simple_graph_drops_duplicates_and_self_links() -> None:
    g = LinkGraph(np.array([0, 0, 0, 1, 2, 2]), np.array([1, 1, 0, 2, 0, 2]), np.zeros(3, np.int64), ("h",), np.ones(3, bool))
    sg = simple_graph(g)
    assert list(zip(sg.src.tolist(), sg.dst.tolist())) == [(0, 1), (1, 2), (2, 0)]
    assert sg.out_degree().tolist() == [1, 1, 1]
    assert sg.in_degree().tolist() == [1, 1, 1]


def test_csr_matches_adjacency_on_random_graphs() -> None:
    rng = random.Random(1)
    for _ in range(20):
        g = random_graph(rng, rng.randint(1, 30), rng.randint(0, 90))
        sg = simple_graph(g)
        adj = adjacency(g)
        rev = reverse(adj)
        for v in range(g.n_pages):
            row = sg.out.indices[sg.out.indptr[v] : sg.out.indptr[v + 1]]
            assert sorted(row.tolist()) == sorted(adj[v])
            col = sg.inn.indices[sg.inn.indptr[v] : sg.inn.indptr[v + 1]]
            assert sorted(col.tolist()) == sorted(rev[v])


def test_bfs_layers_match_reference_bfs() -> None:
    rng = random.Random(2)
    for _ in range(30):
        g = random_graph(rng, rng.randint(1, 40), rng.randint(0, 80))
        sg = simple_graph(g)
        adj = adjacency(g)
        for source in range(g.n_pages):
            dist = bfs(adj, [source])
            expected = np.bincount(list(dist.values()))
            assert bfs_layers(sg.out, source).tolist() == expected.tolist()


def test_reachable_from_many_sources() -> None:
    rng = random.Random(3)
    for _ in range(30):
        g = random_graph(rng, rng.randint(1, 40), rng.randint(0, 60))
        sg = simple_graph(g)
        adj = adjacency(g)
        sources = sorted(rng.sample(range(g.n_pages), rng.randint(0, min(4, g.n_pages))))
        mask = reachable(sg.out, np.asarray(sources, dtype=np.int64))
        assert set(np.flatnonzero(mask).tolist()) == set(bfs(adj, sources))


def test_unique_and_counts() -> None:
    values = np.array([5, 1, 5, 3, 1, 5])
    assert unique_sorted(values).tolist() == [1, 3, 5]
    distinct, counts = count_values(values)
    assert distinct.tolist() == [1, 3, 5] and counts.tolist() == [2, 1, 3]
    assert unique_sorted(np.zeros(0, np.int64)).size == 0
    assert count_values(np.zeros(0, np.int64))[1].size == 0


@pytest.mark.parametrize(
    ("src", "dst", "hosts", "message"),
    [
        ([0], [3], [0, 0, 0], "dst holds ids outside"),
        ([-1], [0], [0, 0, 0], "src holds ids outside"),
        ([0], [1], [0, 5, 0], "page_host holds ids outside"),
    ],
)
def test_bad_graphs_are_analysis_errors(src: list[int], dst: list[int], hosts: list[int], message: str) -> None:
    g = LinkGraph(np.array(src), np.array(dst), np.array(hosts), ("h",), np.ones(3, bool))
    with pytest.raises(AnalysisError, match=message):
        simple_graph(g)


def test_float_ids_are_rejected() -> None:
    g = LinkGraph(np.array([0.0]), np.array([1.0]), np.zeros(2, np.int64), ("h",), np.ones(2, bool))
    with pytest.raises(AnalysisError, match="integer"):
        simple_graph(g)
