"""Degree distributions, effective in-degree and power-law fits. Pure.

*In-degree* and *out-degree* count distinct linking / linked pages (the
:class:`~webgather.analysis.graphops.SimpleGraph`). *Effective in-degree*
follows the documents: links between pages of the same host (navigational
links) are dropped, and the endorsements one other host gives a page count at
most :data:`ENDORSEMENTS_PER_HOST_MAX` (10): ``sum over src_host of
min(count(dst, src_host), 10)``, counting distinct linking pages.

The power-law fit is the ``powerlaw`` package's discrete maximum-likelihood
fit (Clauset, Shalizi and Newman 2009): ``x_min`` chosen by minimising the
Kolmogorov-Smirnov distance, the exponent by likelihood, and a normalised
log-likelihood ratio against a log-normal (``R > 0`` favours the power law,
``p`` its significance). ``x_min`` is searched among the values that leave
at least :func:`min_tail` values (10, or 1 % of them if more) in the tail:
fits on fewer are too noisy to choose by, and the search stays near a
hundred candidates instead of every distinct value (the package spends
its time per candidate). The package warns as it goes (deprecations, scipy's
OptimizeWarning, divide-by-zero RuntimeWarnings); those are silenced inside
:func:`fit_power_law` only. Fits on more than ``max_values`` values use a
seeded random sample of that size, and the report says so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from webgather.analysis.graphops import SimpleGraph, count_values, unique_sorted
from webgather.errors import AnalysisError

__all__ = [
    "ENDORSEMENTS_PER_HOST_MAX",
    "DegreeStats",
    "PowerLawFit",
    "degree_histogram",
    "degree_stats",
    "effective_in_degree",
    "fit_power_law",
]

ENDORSEMENTS_PER_HOST_MAX = 10
_MIN_FIT_VALUES = 10


@dataclass(frozen=True)
class PowerLawFit:
    """A discrete power-law fit ``P(k) ~ k^-alpha`` for ``k >= x_min``."""

    n_values: int
    """How many positive values the fit saw (after sampling)."""
    n_total: int
    """How many positive values there were."""
    x_min: float
    alpha: float
    alpha_stderr: float
    n_tail: int
    """Values >= x_min."""
    ks_distance: float
    """Kolmogorov-Smirnov distance between the tail and the fitted law."""
    lognormal_llr: float
    """Normalised log-likelihood ratio power law vs log-normal (> 0 favours the power law)."""
    lognormal_p: float
    note: str = ""
    """Why the log-normal comparison is missing ("" when it is there)."""


@dataclass(frozen=True)
class DegreeStats:
    """One degree sequence: summary, histogram, fit."""

    name: str
    n_pages: int
    mean: float
    median: float
    maximum: int
    zero_share: float
    histogram: list[tuple[int, int]]
    """(degree, pages with that degree), for every degree that occurs."""
    fit: PowerLawFit | None
    """None when fewer than 10 positive values or 3 distinct ones, or the fit failed."""
    fit_note: str
    """Why there is no fit ("" when there is one)."""


def effective_in_degree(graph: SimpleGraph, page_host: np.ndarray) -> np.ndarray:
    """Per page: distinct in-links from other hosts, at most 10 counted per linking host."""
    hosts = page_host.astype(np.int64, copy=False)
    src_host = hosts[graph.src]
    cross = src_host != hosts[graph.dst]
    n_hosts = int(hosts.max()) + 1 if hosts.size else 1
    keys, counts = count_values(graph.dst[cross].astype(np.int64) * n_hosts + src_host[cross])
    capped = np.minimum(counts, ENDORSEMENTS_PER_HOST_MAX)
    summed = np.bincount(keys // n_hosts, weights=capped, minlength=graph.n)
    return np.rint(summed).astype(np.int64)


def degree_histogram(degrees: np.ndarray) -> list[tuple[int, int]]:
    """(degree, count) for every degree value that occurs, ascending."""
    if degrees.size == 0:
        return []
    counts = np.bincount(degrees)
    values = np.flatnonzero(counts)
    return [(int(v), int(counts[v])) for v in values]


def _xmin_search_end(values: np.ndarray) -> float:
    """Largest x_min candidate + 1: every candidate leaves :func:`min_tail` values in the tail."""
    ordered = np.sort(values)
    return float(ordered[-min_tail(values.size)]) + 1.0


def min_tail(n_values: int) -> int:
    """Fewest values a candidate x_min may leave in the tail: max(10, 1 %), at most all."""
    return min(n_values, max(_MIN_FIT_VALUES, n_values // 100))


@contextmanager
def _powerlaw_boundary(what: str) -> Iterator[None]:
    """The one place the ``powerlaw`` package's warnings and errors are handled."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)  # OptimizeWarning is a UserWarning
        try:
            yield
        except (ValueError, ArithmeticError, IndexError, RuntimeError) as exc:
            raise AnalysisError(f"{what} failed: {exc}") from None


def _compare(fit: Any) -> tuple[float, float, str]:
    """(normalised log-likelihood ratio vs log-normal, p, note on failure)."""
    try:
        with _powerlaw_boundary("log-normal comparison"):
            llr, p = fit.distribution_compare("power_law", "lognormal", normalized_ratio=True)
    except AnalysisError as exc:
        return math.nan, math.nan, str(exc)
    return float(llr), float(p), ""


def fit_power_law(
    values: np.ndarray, rng: np.random.Generator, *, max_values: int = 300_000
) -> PowerLawFit | None:
    """Discrete power-law fit of the positive ``values``; None if too few to fit.

    :class:`AnalysisError` if the package fails on the data.
    """
    positive = values[values > 0]
    total = int(positive.size)
    if total > max_values:
        positive = rng.choice(positive, size=max_values, replace=False)
    if positive.size < _MIN_FIT_VALUES or unique_sorted(positive).size < 3:
        return None
    import powerlaw  # slow import (matplotlib, mpmath): only when fitting

    with _powerlaw_boundary("power-law fit"):
        fit = powerlaw.Fit(positive.astype(np.float64), discrete=True, verbose=False,
                           xmin=(float(positive.min()), _xmin_search_end(positive)))
        law = fit.power_law
        alpha, stderr, ks = float(law.alpha), float(law.standard_err), float(law.D)
    if not (math.isfinite(alpha) and math.isfinite(float(fit.xmin))):
        raise AnalysisError("power-law fit found no x_min")
    llr, p, note = _compare(fit)
    return PowerLawFit(
        n_values=int(positive.size), n_total=total, x_min=float(fit.xmin), alpha=alpha,
        alpha_stderr=stderr, n_tail=int(np.count_nonzero(positive >= fit.xmin)), ks_distance=ks,
        lognormal_llr=llr, lognormal_p=p, note=note,
    )


def degree_stats(
    name: str, degrees: np.ndarray, rng: np.random.Generator, *, max_fit_values: int = 300_000
) -> DegreeStats:
    """Summary, histogram and power-law fit of one degree sequence (a failed fit is noted)."""
    n = int(degrees.size)
    note = ""
    try:
        fit = fit_power_law(degrees, rng, max_values=max_fit_values)
    except AnalysisError as exc:
        fit, note = None, str(exc)
    if fit is None and not note:
        note = f"fewer than {_MIN_FIT_VALUES} positive values or 3 distinct ones"
    return DegreeStats(
        name=name,
        n_pages=n,
        mean=float(degrees.mean()) if n else 0.0,
        median=float(np.median(degrees)) if n else 0.0,
        maximum=int(degrees.max()) if n else 0,
        zero_share=float(np.count_nonzero(degrees == 0) / n) if n else 0.0,
        histogram=degree_histogram(degrees),
        fit=fit,
        fit_note=note,
    )
