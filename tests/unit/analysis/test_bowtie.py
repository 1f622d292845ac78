"""SCCs and bow-tie regions: a hand-made graph with every region, and random graphs vs Tarjan + BFS."""

from __future__ import annotations

import random

import numpy as np

from webgather.analysis.bowtie import REGIONS, bow_tie, region_labels
from webgather.analysis.graphops import simple_graph
from webgather.linkgraph import LinkGraph

from .reference import Adj, adjacency, bfs, random_graph, reverse, tarjan

HAND_MADE = [
    (0, 1), (1, 2), (2, 0),  # core
    (3, 0), (4, 3),  # IN
    (2, 5), (5, 6),  # OUT
    (3, 7), (7, 5),  # tube
    (4, 8), (9, 6), (10, 8),  # tendrils: 8 from IN, 9 into OUT, 10 only attached to a tendril
    (11, 12), (12, 11),  # disconnected pair; 13 isolated
]


def _graph(edges: list[tuple[int, int]], n: int) -> LinkGraph:
    src, dst = zip(*edges)
    return LinkGraph(np.array(src), np.array(dst), np.zeros(n, np.int64), ("h",), np.ones(n, bool))


def test_hand_made_graph_has_every_region() -> None:
    sg = simple_graph(_graph(HAND_MADE, 14))
    labels, strict, stats = region_labels(sg)
    by_region = {r: sorted(np.flatnonzero(labels == i).tolist()) for i, r in enumerate(REGIONS)}
    assert by_region == {
        "core": [0, 1, 2], "in": [3, 4], "out": [5, 6], "tubes": [7],
        "tendrils": [8, 9, 10], "disconnected": [11, 12, 13],
    }
    assert sorted(np.flatnonzero(strict).tolist()) == [8, 9]
    bow = bow_tie(sg)
    assert bow.sizes() == {"core": 3, "in": 2, "out": 2, "tubes": 1, "tendrils": 3, "disconnected": 3}
    assert bow.tendrils_strict == 2
    assert bow.n_scc == len(tarjan(adjacency(_graph(HAND_MADE, 14))))
    assert bow.n_wcc == 3 and bow.largest_wcc == 11
    assert stats.largest_scc_sizes[:2] == [3, 2]


def _weak(adj: Adj, start: int) -> set[int]:
    undirected = [a | r for a, r in zip(adj, reverse(adj))]
    return set(bfs(undirected, [start]))


def _reference_regions(adj: Adj) -> dict[str, set[int]]:
    comps = tarjan(adj)
    size = max(len(c) for c in comps)
    core = set(min((c for c in comps if len(c) == size), key=min))
    rev = reverse(adj)
    out = set(bfs(adj, [min(core)])) - core
    inn = set(bfs(rev, [min(core)])) - core
    known = core | out | inn
    from_in = set(bfs(adj, sorted(inn))) - known if inn else set()
    to_out = set(bfs(rev, sorted(out))) - known if out else set()
    tubes = from_in & to_out
    weak = _weak(adj, min(core))
    tendrils = weak - known - tubes
    return {
        "core": core, "in": inn, "out": out, "tubes": tubes, "tendrils": tendrils,
        "disconnected": set(range(len(adj))) - weak,
    }


def test_random_graphs_match_tarjan_and_bfs() -> None:
    rng = random.Random(7)
    for _ in range(40):
        n = rng.randint(1, 40)
        g = random_graph(rng, n, rng.randint(0, 2 * n))
        adj = adjacency(g)
        labels, _, stats = region_labels(simple_graph(g))
        expected = _reference_regions(adj)
        for i, region in enumerate(REGIONS):
            assert set(np.flatnonzero(labels == i).tolist()) == expected[region], region
        comps = tarjan(adj)
        assert stats.n_scc == len(comps)
        assert stats.largest_scc_sizes == sorted((len(c) for c in comps), reverse=True)[:10]


def test_empty_graph() -> None:
    g = LinkGraph(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), (), np.zeros(0, bool))
    bow = bow_tie(simple_graph(g))
    assert bow.n_pages == 0 and sum(bow.sizes().values()) == 0
