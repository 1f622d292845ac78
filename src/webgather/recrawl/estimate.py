"""Change-rate estimators for pages checked now and then. Pure.

A crawler sees a page only when it fetches it: between two visits it learns
*whether* the page changed, never *how often*. The naive estimate (changes
seen / time watched) therefore underestimates the rate of pages that change
more than once between visits. Cho & Garcia-Molina ("Estimating frequency of
change", ACM TOIT 2003) model changes as a Poisson process of rate ``r`` and
give two estimators this module implements:

* :func:`improved_rate` for regular intervals ``I``: with ``n`` visits and
  ``X`` of them finding a change, ``r = -log((n - X + 0.5) / (n + 0.5)) / I``.
* :func:`irregular_mle` for irregular intervals: the maximum-likelihood rate
  solving ``sum_changed t_i / (exp(r t_i) - 1) = sum_unchanged t_j``.

webgather's intervals are irregular (adaptive policies revisit pages at
different rates, cycles slip), so :func:`estimate_rate` (what the re-crawl
uses) is the irregular-interval MLE **plus half a pseudo-observation of an
unchanged interval of the mean length**. With regular intervals that
pseudo-observation makes the MLE equation read ``X I / (e^{rI} - 1) =
(n - X + 0.5) I``, i.e. exactly the improved estimator above: the same
small-sample correction (finite when every visit saw a change, 0 when none
did), extended to irregular intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["Observation", "estimate_rate", "improved_rate", "irregular_mle", "naive_rate"]

Observation = tuple[float, bool]
"""(seconds since the previous visit, whether the page had changed)."""

_ITERATIONS = 200
_REL_TOL = 1e-10


def naive_rate(n: int, changes: int, interval_s: float) -> float:
    """Changes seen per second watched: biased low when pages change between visits."""
    if n <= 0 or interval_s <= 0:
        raise ValueError("need n >= 1 and interval_s > 0")
    return changes / (n * interval_s)


def improved_rate(n: int, changes: int, interval_s: float) -> float:
    """Cho & Garcia-Molina's estimator for ``n`` visits ``interval_s`` apart, ``changes`` of them changed."""
    if n <= 0 or interval_s <= 0 or not 0 <= changes <= n:
        raise ValueError("need n >= 1, 0 <= changes <= n and interval_s > 0")
    return -math.log((n - changes + 0.5) / (n + 0.5)) / interval_s


def irregular_mle(observations: Sequence[Observation], pseudo_unchanged: float = 0.0) -> float:
    """Maximum-likelihood Poisson rate from visits at irregular intervals.

    ``pseudo_unchanged`` adds that weight of an unchanged interval of the mean
    length (0.5 in :func:`estimate_rate`). Returns 0.0 when no change was seen,
    ``math.inf`` when every interval changed and there is no pseudo-observation.
    """
    changed = [t for t, c in observations if c and t > 0]
    unchanged_s = sum(t for t, c in observations if not c and t > 0)
    if pseudo_unchanged > 0:
        intervals = [t for t, _ in observations if t > 0]
        if intervals:
            unchanged_s += pseudo_unchanged * sum(intervals) / len(intervals)
    if not changed:
        return 0.0
    if unchanged_s <= 0:
        return math.inf
    return _solve(changed, unchanged_s)


def estimate_rate(observations: Sequence[Observation]) -> float:
    """The re-crawl's change-rate estimate (changes per second): see the module docstring."""
    return irregular_mle(observations, pseudo_unchanged=0.5)


def _likelihood_slope(rate: float, changed: Sequence[float], unchanged_s: float) -> float:
    """d log L / d rate: decreasing in ``rate`` from +inf to -unchanged_s."""
    return sum(t / math.expm1(rate * t) if rate * t < 700.0 else 0.0 for t in changed) - unchanged_s


def _solve(changed: Sequence[float], unchanged_s: float) -> float:
    """The root of :func:`_likelihood_slope` by bisection on log(rate)."""
    lo = hi = len(changed) / (sum(changed) + unchanged_s)  # the naive rate: a starting bracket
    while _likelihood_slope(lo, changed, unchanged_s) < 0:
        lo /= 4.0
    while _likelihood_slope(hi, changed, unchanged_s) > 0:
        hi *= 4.0
    for _ in range(_ITERATIONS):
        mid = math.sqrt(lo * hi)
        if _likelihood_slope(mid, changed, unchanged_s) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= _REL_TOL * hi:
            break
    return math.sqrt(lo * hi)
