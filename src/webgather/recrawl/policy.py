"""Revisit policies: how often to visit each page under a fetch budget. Pure.

A policy turns per-page change rates ``lam`` (changes per second) and a budget
(visits per second across the pages) into a revisit frequency ``f`` per page
(visits per second); :func:`select_due` then picks the most overdue pages
for a cycle's budget.
Every frequency is clipped to ``[f_min, f_max]``: ``f_max`` is one visit per
cycle (a page is fetched at most once in a cycle), ``f_min`` one visit per
``max_interval_s`` (so that deaths and wrong estimates are noticed).

* ``uniform``: every page the same frequency (with a budget of one fetch per
  page per cycle: every page once per cycle, the "re-crawl everything"
  baseline).
* ``proportional``: ``f`` proportional to ``lam``.
* ``optimal``: Cho & Garcia-Molina ("Synchronizing a database to improve
  freshness", SIGMOD 2000): maximize the mean time-averaged freshness
  ``F(lam, f) = (f / lam) (1 - exp(-lam / f))`` of a page visited every ``1/f``
  seconds, subject to ``sum f = budget``. The Lagrange condition
  ``dF/df = mu`` reads ``g(lam / f) = mu lam`` with ``g(x) = 1 - (1 + x) e^-x``
  (increasing from 0 to 1), so ``f = lam / g^-1(mu lam)`` when ``mu lam < 1``
  and ``f = 0`` otherwise: pages that change too often for the budget get
  *fewer* visits (none at all past ``1 / mu``), since a visit buys them
  little freshness. ``mu`` is found by bisection so that the clipped
  frequencies spend the budget.

:func:`effective_rates` prepares the rates the policies see: each page's
estimate shrunk toward the population mean while it has few observations
(a page never seen changing is not banished after one quiet visit), plus the
death rate of a page (1 / mean page life; the documents measured 1.43 years).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Literal

import numpy as np

from webgather.config import RecrawlConfig
from webgather.errors import ConfigError

__all__ = [
    "check_config",
    "POLICIES",
    "Policy",
    "age",
    "allocate",
    "apportion",
    "effective_rates",
    "expected_freshness_now",
    "freshness",
    "plan_revisits",
    "select_due",
]

Policy = Literal["uniform", "proportional", "optimal"]
POLICIES: tuple[Policy, ...] = ("uniform", "proportional", "optimal")

_X_GRID = np.geomspace(1e-6, 60.0, 8192)
_G_GRID = -np.expm1(-_X_GRID) - _X_GRID * np.exp(-_X_GRID)
_BISECT_STEPS = 100


def freshness(lam: np.ndarray | float, f: np.ndarray | float) -> np.ndarray:
    """Expected time-averaged freshness of pages changing at ``lam``, visited at ``f`` (regularly)."""
    lam_a, f_a = np.broadcast_arrays(np.asarray(lam, dtype=float), np.asarray(f, dtype=float))
    out = np.where(lam_a <= 0, 1.0, 0.0)
    ok = (lam_a > 0) & (f_a > 0)
    x = lam_a[ok] / f_a[ok]
    out[ok] = -np.expm1(-x) / x
    return out


def age(lam: np.ndarray | float, f: np.ndarray | float) -> np.ndarray:
    """Expected time-averaged age (seconds) of such pages: 0 while fresh, time since the first missed change."""
    lam_a, f_a = np.broadcast_arrays(np.asarray(lam, dtype=float), np.asarray(f, dtype=float))
    out = np.where((lam_a > 0) & (f_a <= 0), np.inf, 0.0)
    ok = (lam_a > 0) & (f_a > 0)
    interval, rate = 1.0 / f_a[ok], lam_a[ok]
    out[ok] = interval / 2 - 1 / rate + (-np.expm1(-rate * interval)) / (rate**2 * interval)
    return out


def expected_freshness_now(last_s: np.ndarray, rate_per_s: np.ndarray, now: float) -> float:
    """Mean probability that a page has not changed since its last visit (Poisson at its estimated rate)."""
    last = np.asarray(last_s, dtype=float)
    if last.size == 0:
        return 1.0
    rate = np.nan_to_num(np.asarray(rate_per_s, dtype=float), nan=0.0, posinf=1e6)
    return float(np.exp(-rate * np.maximum(now - last, 0.0)).mean())


def effective_rates(
    estimates: np.ndarray, n_obs: np.ndarray, *, prior_weight: float, death_rate: float, fallback: float,
    priors: np.ndarray | None = None,
) -> np.ndarray:
    """Rates for the policies: ``(n x est + w x prior) / (n + w) + death_rate``.

    A page's prior is its own (``priors``, e.g. from the age of its content
    at the first visit) where finite, else the mean estimate of the pages with
    at least one observed interval (``fallback`` when there are none).
    """
    est = np.asarray(estimates, dtype=float)
    n = np.asarray(n_obs, dtype=float)
    known = (n > 0) & np.isfinite(est)
    population = float(est[known].mean()) if known.any() else fallback
    prior = np.full(est.size, population)
    if priors is not None:
        own = np.asarray(priors, dtype=float)
        prior = np.where(np.isfinite(own), own, population)
    est = np.where(np.isfinite(est), est, prior)
    shrunk = (n * est + prior_weight * prior) / np.maximum(n + prior_weight, 1e-12)
    result: np.ndarray = shrunk + death_rate
    return result


def allocate(policy: Policy, lam: np.ndarray, budget: float, f_min: float, f_max: float) -> np.ndarray:
    """Revisit frequencies (visits/s) for pages of rates ``lam`` spending ``budget`` visits/s."""
    lam = np.asarray(lam, dtype=float)
    if f_min < 0 or f_max <= 0 or f_min > f_max or budget < 0:
        raise ValueError("need 0 <= f_min <= f_max, f_max > 0 and budget >= 0")
    if lam.size == 0:
        return np.zeros(0)
    if policy == "uniform":
        return np.full(lam.size, min(max(budget / lam.size, f_min), f_max))
    if lam.size * f_max <= budget:
        return np.full(lam.size, f_max)
    if policy == "proportional":
        return _bisect(lambda c: np.clip(c * lam, f_min, f_max), budget, decreasing=False)
    if policy == "optimal":
        return _bisect(lambda mu: np.clip(_optimal_f(lam, mu), f_min, f_max), budget, decreasing=True)
    raise ValueError(f"unknown policy {policy!r}")


def _optimal_f(lam: np.ndarray, mu: float) -> np.ndarray:
    """Frequencies where dF/df = mu (0 where mu x lam >= 1; inf where lam = 0 is never chosen)."""
    target = mu * lam
    f = np.zeros(lam.size)
    ok = (target < 1.0) & (lam > 0)
    x = _g_inverse(target[ok])
    f[ok] = lam[ok] / x
    return f


def _g_inverse(y: np.ndarray) -> np.ndarray:
    """x with 1 - (1 + x) e^-x = y, for 0 <= y < 1 (table + interpolation; sqrt(2y) near 0)."""
    x = np.interp(y, _G_GRID, _X_GRID)
    small = y < _G_GRID[0]
    x[small] = np.sqrt(2.0 * y[small])
    result: np.ndarray = np.maximum(x, 1e-300)
    return result


def _bisect(freqs: Callable[[float], np.ndarray], budget: float, *, decreasing: bool) -> np.ndarray:
    """Bisection in log space on the multiplier of ``freqs`` so the total is ``budget``
    (the side of the bracket within the budget is returned)."""
    lo, hi = -60.0, 60.0
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2
        total = float(freqs(math.exp(mid)).sum())
        if (total > budget) == decreasing:
            lo = mid
        else:
            hi = mid
    return freqs(math.exp(hi if decreasing else lo))


def select_due(last_s: np.ndarray, f: np.ndarray, now: float, limit: int) -> np.ndarray:
    """Indices of the ``limit`` pages most overdue at ``now``, most overdue first.

    Overdue ratio: ``(now - last) x f``, the visits a page is owed since its
    last one. The selection spends the whole budget every cycle (a backlog
    scheduler): since the policy's frequencies add up to the budget, each page
    is visited ``f`` times a second in the long run, and pages that were all
    fetched at once (a first crawl) spread out over the cycles instead of
    falling due together. Pages with ``f = 0`` are never taken.
    """
    last = np.asarray(last_s, dtype=float)
    freq = np.asarray(f, dtype=float)
    urgency = (now - last) * freq
    eligible = np.flatnonzero((freq > 0) & (urgency > 0))
    if limit <= 0 or eligible.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(-urgency[eligible], kind="stable")
    return eligible[order[:limit]]


def plan_revisits(
    last_s: np.ndarray,
    rate_per_s: np.ndarray,
    n_obs: np.ndarray,
    *,
    policy: Policy,
    now: float,
    cycle_s: float,
    limit: int,
    max_interval_s: float,
    prior_weight: float,
    death_rate: float,
    first_age_s: np.ndarray | None = None,
) -> np.ndarray:
    """Indices of the pages to revisit in the cycle starting at ``now``: at most ``limit``.

    The policy spends ``limit`` visits per cycle (``f_max`` = one visit per
    cycle, ``f_min`` = one per ``max_interval_s``), on the most overdue pages;
    with ``limit`` at least the number of pages every page is revisited once
    per cycle. ``first_age_s`` (age of each page's content when first seen,
    nan if unknown) gives each page its prior rate ``1 / (age + cycle_s)``:
    under a Poisson process the age at a random time is exponential with
    the page's rate, so a page last modified minutes ago is likely to change
    soon and one untouched for months is not.
    """
    if limit <= 0 or last_s.size == 0:
        return np.zeros(0, dtype=np.int64)
    f_max = 1.0 / cycle_s
    f_min = min(1.0 / max_interval_s, f_max)
    priors = None if first_age_s is None else 1.0 / (np.asarray(first_age_s, dtype=float) + cycle_s)
    lam = effective_rates(rate_per_s, n_obs, prior_weight=prior_weight, death_rate=death_rate, fallback=f_max,
                          priors=priors)
    f = allocate(policy, lam, min(limit, last_s.size) / cycle_s, f_min, f_max)
    return select_due(last_s, f, now, limit)


def apportion(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """``total`` split in proportion to ``weights`` (largest remainder, ties by name): sums to ``total``.

    A cluster cycle's budget over its nodes by buckets owned: every node computes
    the same split from the same table, so the shares add up without talking."""
    weight = sum(max(0, w) for w in weights.values())
    if weight <= 0:
        return {name: 0 for name in weights}
    exact = {name: total * max(0, w) / weight for name, w in weights.items()}
    shares = {name: math.floor(x) for name, x in exact.items()}
    order = sorted(weights, key=lambda name: (-(exact[name] - shares[name]), name))
    for name in order[:total - sum(shares.values())]:
        shares[name] += 1
    return shares


def check_config(cfg: RecrawlConfig) -> None:
    """:class:`ConfigError` for settings a cycle cannot run with."""
    checks = [
        (cfg.policy in POLICIES, f"recrawl.policy must be one of {', '.join(POLICIES)}"),
        (cfg.cycle_s > 0, "recrawl.cycle_s must be > 0"),
        (cfg.budget_per_cycle is None or cfg.budget_per_cycle >= 1, "recrawl.budget_per_cycle must be >= 1"),
        (0.0 <= cfg.new_url_share <= 1.0, "recrawl.new_url_share must be in [0, 1]"),
        (cfg.dead_after_failures >= 1, "recrawl.dead_after_failures must be >= 1"),
        (0 <= cfg.near_dup_max_bits < 16, "recrawl.near_dup_max_bits must be in 0..15"),
        (cfg.max_interval_s > 0 and cfg.page_life_s > 0, "recrawl.max_interval_s and page_life_s must be > 0"),
        (cfg.prior_weight >= 0 and cfg.history_max >= 1, "recrawl.prior_weight >= 0 and history_max >= 1"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
