"""The degree laws the synthetic web promises, measured on its link graph."""

from __future__ import annotations

import time

import numpy as np
import pytest

from webgather.testweb import FaultRates, WebModel, WebParams


def tail_exponent(degrees: np.ndarray, k_min: int) -> float:
    """Discrete power-law MLE (Clauset et al. eq. 3.7): 1 + n / sum(ln(k / (k_min - 1/2)))."""
    tail = degrees[degrees >= k_min].astype(np.float64)
    return 1.0 + tail.size / float(np.sum(np.log(tail / (k_min - 0.5))))


@pytest.mark.parametrize("gamma", [1.86, 2.1, 2.5])
def test_in_degree_tail_exponent_is_recovered(gamma: float) -> None:
    params = WebParams(seed=5, n_hosts=40, mean_pages_per_host=1000, in_degree_exponent=gamma, faults=FaultRates.none())
    graph = WebModel(params).link_graph()
    in_degree = np.bincount(graph.dst, minlength=graph.n_pages)
    estimate = tail_exponent(in_degree, k_min=20)
    assert abs(estimate - gamma) < 0.12, estimate


def test_out_degree_mean_and_cross_host_share() -> None:
    params = WebParams(seed=3, n_hosts=50, mean_pages_per_host=400)
    graph = WebModel(params).link_graph()
    out_degree = np.bincount(graph.src, minlength=graph.n_pages)
    alive = out_degree > 0
    assert abs(out_degree[alive].mean() - 25.0) < 0.6
    assert abs(out_degree.mean() - 25.0 * (1 - params.dying_share)) < 0.6
    assert out_degree.max() > 4 * 25
    assert 0.005 < (~alive).mean() < 0.02
    cross = graph.page_host[graph.src] != graph.page_host[graph.dst]
    assert 0.12 < cross.mean() < 0.18
    pages = np.bincount(graph.page_host)
    assert pages.sum() == 20_000 and pages.max() > 3 * pages.mean()


def test_link_graph_of_100k_pages_takes_seconds() -> None:
    params = WebParams(seed=1, n_hosts=100, mean_pages_per_host=1000)
    started = time.process_time()
    graph = WebModel(params).link_graph()
    elapsed = time.process_time() - started
    assert graph.n_pages == 100_000 and graph.n_links > 2_000_000
    assert elapsed < 15.0, elapsed
