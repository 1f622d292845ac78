"""Adjacency, breadth-first order, URL traces."""

from __future__ import annotations

import numpy as np
import pytest

from webgather.errors import AnalysisError
from webgather.sim.traces import (
    adjacency,
    bfs_order,
    default_seeds,
    discovery_trace,
    link_log_trace,
    page_keys,
)
from webgather.urls import fingerprint

from .conftest import make_graph

EDGES = [(0, 2), (0, 1), (1, 3), (2, 3), (2, 4), (4, 0), (3, 5)]


def test_adjacency_keeps_link_order_within_a_page() -> None:
    adj = adjacency(make_graph(EDGES, [0, 0, 1, 1, 2, 2]))
    assert list(adj.indptr) == [0, 2, 3, 5, 6, 7, 7]
    assert list(adj.indices[:2]) == [2, 1]


def test_bfs_order_is_fifo_order() -> None:
    graph = make_graph(EDGES, [0, 0, 1, 1, 2, 2])
    assert list(bfs_order(graph, [0])) == [0, 2, 1, 3, 4, 5]
    assert list(bfs_order(graph, [4])) == [4, 0, 2, 1, 3, 5]


def test_bfs_does_not_expand_unfetched_pages() -> None:
    graph = make_graph(EDGES, [0, 0, 1, 1, 2, 2], fetched=[True, True, False, True, True, True])
    assert list(bfs_order(graph, [0])) == [0, 2, 1, 3, 5]  # 4 is only linked from 2


def test_traces_use_url_fingerprints_when_known() -> None:
    urls = [f"http://h.test/{i}" for i in range(6)]
    graph = make_graph(EDGES, [0] * 6, urls=urls)
    keys = page_keys(graph)
    assert int(keys[3]) == fingerprint(urls[3])
    trace = discovery_trace(graph, bfs_order(graph, [0]))
    # pages in order 0, 2, 1, 3, 4, 5: their links 2 1 | 3 4 | 3 | 5 | 0
    assert [int(k) for k in trace] == [fingerprint(urls[i]) for i in (2, 1, 3, 4, 3, 5, 0)]
    assert [int(k) for k in link_log_trace(graph)] == [fingerprint(urls[d]) for _, d in EDGES]


def test_page_keys_without_urls_are_distinct() -> None:
    graph = make_graph(EDGES, [0] * 6)
    assert len(set(page_keys(graph).tolist())) == 6


def test_default_seeds_are_first_pages_of_hosts() -> None:
    graph = make_graph(EDGES, [1, 1, 0, 0, 2, 2])
    assert list(default_seeds(graph, 2)) == [0, 2]
    assert list(default_seeds(graph)) == [0]


def test_bad_seeds_and_edges_are_analysis_errors() -> None:
    graph = make_graph(EDGES, [0] * 6)
    with pytest.raises(AnalysisError):
        bfs_order(graph, [])
    with pytest.raises(AnalysisError):
        bfs_order(graph, [6])
    with pytest.raises(AnalysisError):
        adjacency(make_graph([(0, 9)], [0, 0]))
    assert np.array_equal(bfs_order(graph, [5]), [5])


def test_recorded_crawl_order_and_seeds() -> None:
    # link-log order: page 3 was crawled first, then 1, then 4; 0 was fetched without links
    graph = make_graph([(3, 1), (3, 4), (1, 4), (4, 2)], [0] * 6,
                       fetched=[True, True, False, True, True, False])
    from webgather.sim.traces import crawl_order, crawl_seeds, name_keys

    assert list(crawl_order(graph)) == [3, 1, 4, 0]
    assert list(crawl_seeds(graph)) == [0, 3]  # fetched, and no logged link points to them
    keys = name_keys(["a", "", ""], 3)
    assert int(keys[0]) == fingerprint("a") and len(set(keys.tolist())) == 3
