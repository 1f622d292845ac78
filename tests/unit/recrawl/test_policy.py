"""Revisit policies: budgets spent, the freshness optimum, due selection."""

from __future__ import annotations

import numpy as np
import pytest

from webgather.recrawl.policy import age, allocate, effective_rates, freshness, select_due

DAY = 86400.0


def _rates() -> np.ndarray:
    # hourly, daily, monthly and (almost) never-changing pages
    return np.array([1 / 3600.0] * 5 + [1 / DAY] * 10 + [1 / (30 * DAY)] * 35 + [1e-12] * 50)


@pytest.mark.parametrize("policy", ["uniform", "proportional", "optimal"])
def test_budget_is_spent_within_the_clip(policy: str) -> None:
    lam = _rates()
    budget = 20 / 3600.0  # 20 visits an hour for 100 pages
    f = allocate(policy, lam, budget, f_min=1 / (90 * DAY), f_max=1 / 900.0)  # type: ignore[arg-type]
    assert f.sum() == pytest.approx(budget, rel=1e-6)
    assert (f >= 1 / (90 * DAY) - 1e-18).all() and (f <= 1 / 900.0 + 1e-18).all()


def test_uniform_with_a_full_budget_visits_every_page_once_per_cycle() -> None:
    lam = _rates()
    f = allocate("uniform", lam, budget=lam.size / 3600.0, f_min=0.0, f_max=1 / 3600.0)
    assert np.allclose(f, 1 / 3600.0)


def test_optimal_beats_uniform_and_proportional() -> None:
    lam = _rates()
    budget = 20 / 3600.0
    mean = {p: float(freshness(lam, allocate(p, lam, budget, 0.0, 1.0)).mean())
            for p in ("uniform", "proportional", "optimal")}
    assert mean["optimal"] >= mean["uniform"] - 1e-9
    assert mean["optimal"] >= mean["proportional"] - 1e-9
    assert mean["uniform"] > mean["proportional"]  # CG-M's surprise: proportional is worse than uniform


def test_optimal_is_a_local_optimum() -> None:
    rng = np.random.default_rng(5)
    lam = rng.lognormal(np.log(1 / DAY), 2.0, 200)
    budget = 50 / DAY
    f = allocate("optimal", lam, budget, 0.0, 10.0)
    best = float(freshness(lam, f).sum())
    for _ in range(50):  # moving budget between two pages never helps
        i, j = rng.integers(0, lam.size, 2)
        delta = f[j] * 0.1
        g = f.copy()
        g[j] -= delta
        g[i] += delta
        assert float(freshness(lam, g).sum()) <= best + 1e-9


def test_optimal_gives_pages_changing_too_often_fewer_visits() -> None:
    lam = np.array([1 / 60.0, 1 / 3600.0, 1 / DAY])
    f = allocate("optimal", lam, budget=30 / DAY, f_min=0.0, f_max=1.0)
    assert f[0] == 0.0 < f[2] < f[1]


def test_freshness_and_age_formulas() -> None:
    assert freshness(0.0, 1.0)[()] == 1.0
    assert freshness(1.0, 0.0)[()] == 0.0
    assert freshness(1.0, 1.0)[()] == pytest.approx(1 - np.exp(-1))
    assert age(1.0, 1.0)[()] == pytest.approx(0.5 - 1 + (1 - np.exp(-1)))
    assert age(0.0, 1.0)[()] == 0.0


def test_effective_rates_shrink_toward_the_population_mean() -> None:
    est = np.array([0.0, 0.0, 2.0, np.inf])
    n = np.array([0, 10, 10, 3])
    rates = effective_rates(est, n, prior_weight=2.0, death_rate=0.1, fallback=5.0)
    prior = (0.0 + 2.0) / 2  # the finite estimates with observations: pages 1 and 2
    assert rates[0] == pytest.approx(prior + 0.1)
    assert rates[1] == pytest.approx(2 * prior / 12 + 0.1)
    assert rates[2] == pytest.approx((20 + 2 * prior) / 12 + 0.1)
    assert rates[3] == pytest.approx(prior + 0.1)
    assert effective_rates(np.zeros(2), np.zeros(2), prior_weight=1, death_rate=0, fallback=3.0).tolist() == [3.0, 3.0]


def test_select_due_takes_the_most_overdue_first() -> None:
    last = np.array([0.0, 50.0, 90.0, 0.0, 100.0])
    f = np.array([1 / 100.0, 1 / 100.0, 1 / 50.0, 0.0, 1.0])
    assert select_due(last, f, now=100.0, limit=10).tolist() == [0, 1, 2]
    assert select_due(last, f, now=100.0, limit=2).tolist() == [0, 1]
    assert select_due(last, f, now=145.0, limit=10).tolist() == [4, 0, 2, 1]
    assert select_due(last, f, now=145.0, limit=0).tolist() == []


def test_spending_the_budget_visits_pages_at_their_frequencies() -> None:
    f = np.array([4.0, 2.0, 1.0, 1.0]) / 8.0  # visits per cycle: 0.5, 0.25, 0.125, 0.125 (sum 1)
    last = np.zeros(4)
    visits = np.zeros(4)
    for cycle in range(1, 801):
        for i in select_due(last, f, float(cycle), limit=1):
            last[i] = cycle
            visits[i] += 1
    assert np.allclose(visits / 800, f, atol=0.01)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        allocate("optimal", np.ones(3), 1.0, f_min=2.0, f_max=1.0)
    with pytest.raises(ValueError):
        allocate("sometimes", np.ones(3), 1.0, 0.0, 1.0)  # type: ignore[arg-type]
    assert allocate("optimal", np.zeros(0), 1.0, 0.0, 1.0).size == 0


def test_expected_freshness_now() -> None:
    from webgather.recrawl.policy import expected_freshness_now

    assert expected_freshness_now(np.zeros(0), np.zeros(0), 10.0) == 1.0
    value = expected_freshness_now(np.array([0.0, 0.0]), np.array([0.0, np.log(2) / 10]), 10.0)
    assert value == pytest.approx(0.75)
