"""GNP: coordinates from latencies, prediction, top-K choice, httpping noise filter."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from threadpoolctl import threadpool_limits

from webgather import gnp
from webgather.errors import AnalysisError, ConfigError


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    """OpenBLAS threads oversubscribe the shared cores and slow scipy's optimizers 10x."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))


def _aligned(found: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """``found`` moved onto ``truth`` by translation + rotation/reflection (no scaling)."""
    f0, t0 = found - found.mean(axis=0), truth - truth.mean(axis=0)
    rot, _ = orthogonal_procrustes(f0, t0)
    return np.asarray(f0 @ rot + truth.mean(axis=0))


@pytest.mark.parametrize("method", ["L-BFGS-B", "Nelder-Mead"])
def test_recovers_exact_plane_coordinates_from_euclidean_latencies(method: str) -> None:
    rng = np.random.default_rng(7)
    landmarks = rng.uniform(0, 100, (6, 2))
    found = gnp.fit_landmarks(_dist(landmarks, landmarks), 2, rng, method=method)
    assert np.allclose(_aligned(found, landmarks), landmarks, atol=1e-4)


def test_hosts_placed_exactly_and_pairwise_distances_predicted() -> None:
    rng = np.random.default_rng(3)
    landmarks = rng.uniform(0, 100, (9, 2))
    hosts = rng.uniform(0, 100, (20, 2))
    lm = gnp.fit_landmarks(_dist(landmarks, landmarks), 2, rng)
    placed = gnp.place(lm, _dist(hosts, landmarks), rng)
    assert placed.shape == (20, 2)
    predicted = gnp.predict(placed[:, None, :], placed[None, :, :])
    assert np.allclose(predicted, _dist(hosts, hosts), atol=1e-5)
    one = gnp.place(lm, _dist(hosts[:1], landmarks)[0], rng)
    assert one.shape == (2,)
    assert gnp.predict(one, placed[0]) == pytest.approx(0.0, abs=1e-5)


def test_predict_is_euclidean() -> None:
    assert gnp.predict(np.array([0.0, 0.0]), np.array([3.0, 4.0])) == pytest.approx(5.0)
    assert list(gnp.relative_errors(np.array([10.0, 20.0]), np.array([12.0, 15.0]))) == \
        pytest.approx([0.2, 0.25])


def test_top_k_and_choose_node() -> None:
    nodes = np.array([[0.0, 0.0], [10.0, 0.0], [1.0, 0.0], [2.0, 0.0], [50.0, 0.0]])
    site = np.array([0.4, 0.0])
    assert list(gnp.top_k_nearest(site, nodes, 3)) == [0, 2, 3]
    assert list(gnp.top_k_nearest(site, nodes, 9)) == [0, 2, 3, 1, 4]
    rng = np.random.default_rng(0)
    picks = [gnp.choose_node(site, nodes, 3, rng) for _ in range(300)]
    assert set(picks) == {0, 2, 3}
    counts = np.bincount(picks, minlength=5)
    assert counts[[0, 2, 3]].min() > 70  # uniform over the three, 100 expected each
    assert {gnp.choose_node(site, nodes, 1, rng) for _ in range(20)} == {0}


def test_choose_least_loaded_balances_among_the_k_nearest() -> None:
    nodes = np.array([[0.0, 0.0], [10.0, 0.0], [1.0, 0.0], [2.0, 0.0], [50.0, 0.0]])
    site = np.array([0.4, 0.0])  # nearest first: 0, 2, 3, then 1, 4
    assert gnp.choose_least_loaded(site, nodes, 3, [0, 0, 0, 0, 0]) == 0  # equal loads: the nearest
    assert gnp.choose_least_loaded(site, nodes, 3, [5, 0, 2, 1, 0]) == 3  # the least loaded of 0, 2, 3
    assert gnp.choose_least_loaded(site, nodes, 3, [1, 0, 1, 4, 0]) == 0  # a tie of 0 and 2: the nearer
    assert gnp.choose_least_loaded(site, nodes, 1, [9, 0, 0, 0, 0]) == 0  # Top1 ignores load
    load = [0.0] * 5
    for _ in range(30):  # sites arriving one by one spread evenly over the three nearest
        load[gnp.choose_least_loaded(site, nodes, 3, load)] += 1
    assert load == [10, 0, 10, 10, 0]
    with pytest.raises(AnalysisError):
        gnp.choose_least_loaded(site, nodes, 3, [0, 0])


def test_filter_samples_keeps_the_three_fullest_buckets() -> None:
    samples = [10, 11, 12, 20, 21, 30, 95, 31, 32, 33]
    # buckets of 10: {1: 3 samples, 2: 2, 3: 4, 9: 1 (the outlier 95)} -> keep 3, 1, 2
    assert gnp.filter_samples(samples, 10) == pytest.approx(200 / 9)
    assert gnp.filter_samples(samples, 10, keep=1) == pytest.approx(31.5)
    assert gnp.filter_samples([5.0], 10) == 5.0
    # ties between equally full buckets go to the lower latency
    assert gnp.filter_samples([1, 11, 21, 31], 10) == pytest.approx(11.0)
    # good samples in two buckets: a lone spike does not take the third place
    assert gnp.filter_samples([40, 41, 42, 43, 44, 45, 46, 47, 280], 5) == pytest.approx(43.5)


def test_bad_input_raises_webgather_errors() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(AnalysisError):
        gnp.fit_landmarks(np.zeros((3, 3)), 2, rng)
    with pytest.raises(AnalysisError):
        gnp.fit_landmarks(np.ones((2, 3)), 2, rng)
    with pytest.raises(ConfigError):
        gnp.fit_landmarks(np.ones((3, 3)), 0, rng)
    with pytest.raises(ConfigError):
        gnp.fit_landmarks(np.ones((3, 3)), 2, rng, method="bogus")
    with pytest.raises(AnalysisError):
        gnp.place(np.zeros((3, 2)), np.ones(4), rng)
    with pytest.raises(AnalysisError):
        gnp.filter_samples([], 10)
    with pytest.raises(AnalysisError):
        gnp.filter_samples([1.0, float("nan")], 10)
    with pytest.raises(ConfigError):
        gnp.filter_samples([1.0], 0)
    with pytest.raises(ConfigError):
        gnp.top_k_nearest(np.zeros(2), np.zeros((3, 2)), 0)


def test_fit_bipartite_recovers_node_site_distances_without_within_side_pairs() -> None:
    rng = np.random.default_rng(4)
    nodes, landmarks = rng.uniform(0, 100, (6, 2)), rng.uniform(0, 100, (7, 2))
    lat = np.sqrt(((nodes[:, None] - landmarks[None]) ** 2).sum(axis=2)) + 1.0
    x, y = gnp.fit_bipartite(lat, 2, rng)
    assert x.shape == (6, 2) and y.shape == (7, 2)
    fitted = np.asarray(gnp.predict(x[:, None, :], y[None, :, :]))
    assert np.median(np.abs(fitted - lat) / lat) < 0.02
    sites = rng.uniform(0, 100, (30, 2))  # placed against the fitted nodes: the nearest node is the true one
    to_nodes = np.sqrt(((sites[:, None] - nodes[None]) ** 2).sum(axis=2)) + 1.0
    placed = gnp.place(x, to_nodes, rng)
    predicted = np.asarray(gnp.predict(placed[:, None, :], x[None, :, :]))
    assert (predicted.argmin(axis=1) == to_nodes.argmin(axis=1)).mean() >= 0.9
    with pytest.raises(AnalysisError):
        gnp.fit_bipartite(np.ones((1, 4)), 2, rng)
    with pytest.raises(AnalysisError):
        gnp.fit_bipartite(np.zeros((3, 3)), 2, rng)
