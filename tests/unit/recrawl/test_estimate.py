"""Change-rate estimators converge to the true rate of synthetic Poisson change processes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from webgather.recrawl.estimate import estimate_rate, improved_rate, irregular_mle, naive_rate


def _visits(rate: float, intervals: np.ndarray, seed: int) -> list[tuple[float, bool]]:
    """Whether a Poisson process of ``rate`` had at least one event in each interval."""
    rng = np.random.default_rng(seed)
    changed = rng.poisson(rate * intervals) > 0
    return [(float(t), bool(c)) for t, c in zip(intervals, changed)]


@pytest.mark.parametrize("rate_x_interval", [0.1, 0.5, 1.0, 2.0])
def test_improved_estimator_converges_with_regular_visits(rate_x_interval: float) -> None:
    rate, interval, n = 1 / 3600.0, 3600.0 * rate_x_interval, 20_000
    obs = _visits(rate, np.full(n, interval), seed=7)
    changes = sum(c for _, c in obs)
    assert improved_rate(n, changes, interval) == pytest.approx(rate, rel=0.05)
    assert estimate_rate(obs) == pytest.approx(improved_rate(n, changes, interval), rel=1e-6)


def test_naive_estimator_is_biased_low_when_pages_change_between_visits() -> None:
    rate, interval, n = 1 / 3600.0, 7200.0, 20_000
    obs = _visits(rate, np.full(n, interval), seed=3)
    changes = sum(c for _, c in obs)
    assert naive_rate(n, changes, interval) < 0.5 * rate
    assert improved_rate(n, changes, interval) == pytest.approx(rate, rel=0.05)


@pytest.mark.parametrize("rate", [1 / 600.0, 1 / 86400.0])
def test_irregular_mle_converges_with_irregular_visits(rate: float) -> None:
    rng = np.random.default_rng(11)
    intervals = rng.uniform(0.1, 3.0, 20_000) / rate
    obs = _visits(rate, intervals, seed=12)
    assert irregular_mle(obs) == pytest.approx(rate, rel=0.05)
    assert estimate_rate(obs) == pytest.approx(rate, rel=0.05)


def test_estimates_tighten_as_observations_grow() -> None:
    rate = 1 / 3600.0
    errors = []
    for n in (50, 500, 5000):
        trials = [estimate_rate(_visits(rate, np.full(n, 3600.0), seed=s)) for s in range(20)]
        errors.append(float(np.sqrt(np.mean((np.array(trials) / rate - 1) ** 2))))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05


def test_edge_cases() -> None:
    assert estimate_rate([]) == 0.0
    assert estimate_rate([(100.0, False)] * 5) == 0.0
    all_changed = [(100.0, True)] * 4
    assert irregular_mle(all_changed) == math.inf
    assert estimate_rate(all_changed) == pytest.approx(improved_rate(4, 4, 100.0))
    assert math.isfinite(estimate_rate([(1e-3, True), (1e9, True)]))
    with pytest.raises(ValueError):
        improved_rate(0, 0, 1.0)
    with pytest.raises(ValueError):
        naive_rate(3, 1, 0.0)
