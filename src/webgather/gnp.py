"""GNP (Global Network Positioning, Ng & Zhang): latencies -> coordinates. Pure.

The GNP-based scheduling study places crawlers and sites in a d-dimensional
Euclidean space so any crawler-site distance can be estimated without
measuring it:

1. A few *landmarks* measure each other (``L x L`` latencies). Their
   coordinates minimize the sum of squared *relative* errors
   ``((measured - |x_i - x_j|) / measured)^2`` over landmark pairs
   (:func:`fit_landmarks`).
2. Every other host (crawler or site) measures only its latency to each
   landmark and is placed by minimizing the same error against the fixed
   landmark coordinates (:func:`place`).
3. ``predict(a, b)`` is the Euclidean distance; a site is given to one of its
   ``k`` nearest crawlers (K = 3 in the study): at random (:func:`choose_node`),
   or the least loaded of them (:func:`choose_least_loaded`, the live assignment).

Optimizer: the study uses the downhill simplex (Nelder-Mead). We start from a
classical multidimensional-scaling solution (exact when the latencies are
Euclidean) and refine with L-BFGS-B on the analytic gradient, which converges
in far fewer evaluations in 50-80 unknowns; ``method="Nelder-Mead"`` runs the
documents' optimizer instead. Seeded random restarts (an injected numpy
``Generator``) guard against a poor local minimum; the best fit wins.

Live (no landmark-landmark pings): crawler nodes can measure web hosts but not
each other, so :func:`fit_bipartite` fits N nodes and L landmark hosts together
from the N x L latencies alone (the same relative error, over measured pairs);
sites are then placed against the *nodes* (:func:`place` with the nodes as anchors).

Noise: httpping samples are noisy (queueing, retransmits). :func:`filter_samples`
is the documents' "statistically weighted mean": bucket the samples by a modulus,
keep the three most frequent buckets, average the samples in them.

Errors: bad parameters raise :class:`~webgather.errors.ConfigError`; latency
data that cannot be used (shape mismatch, non-positive, NaN) raises
:class:`~webgather.errors.AnalysisError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from webgather.errors import AnalysisError, ConfigError

__all__ = [
    "choose_least_loaded",
    "choose_node",
    "filter_samples",
    "fit_bipartite",
    "fit_landmarks",
    "place",
    "predict",
    "relative_errors",
    "top_k_nearest",
]

FloatArray = NDArray[np.float64]
_METHODS = ("L-BFGS-B", "Nelder-Mead")


def _check_positive(latency: FloatArray, what: str) -> None:
    if not np.all(np.isfinite(latency)) or np.any(latency <= 0):
        raise AnalysisError(f"{what} must be finite and > 0")


def _check_method(method: str, dims: int) -> None:
    if method not in _METHODS:
        raise ConfigError(f"GNP method must be one of {_METHODS}, got {method!r}")
    if dims < 1:
        raise ConfigError(f"GNP needs at least 1 dimension, got {dims}")


def _mds(latency: FloatArray, dims: int) -> FloatArray:
    """Classical (Torgerson) MDS: exact coordinates when ``latency`` is Euclidean."""
    n = latency.shape[0]
    centre = np.eye(n) - np.full((n, n), 1.0 / n)
    gram = -0.5 * centre @ (latency**2) @ centre
    values, vectors = np.linalg.eigh(gram)
    order = np.argsort(values)[::-1][:dims]
    coords = vectors[:, order] * np.sqrt(np.clip(values[order], 0.0, None))
    if coords.shape[1] < dims:
        coords = np.hstack([coords, np.zeros((n, dims - coords.shape[1]))])
    return np.asarray(coords, dtype=np.float64)


def _landmark_loss(flat: FloatArray, latency: FloatArray, dims: int) -> tuple[float, FloatArray]:
    x = flat.reshape(-1, dims)
    diff = x[:, None, :] - x[None, :, :]
    dist = np.sqrt((diff**2).sum(axis=2))
    n = x.shape[0]
    off = ~np.eye(n, dtype=bool)
    err = np.zeros_like(dist)
    err[off] = (latency[off] - dist[off]) / latency[off]
    loss = 0.5 * float((err**2).sum())  # each pair counted twice -> halve
    coef = np.zeros_like(dist)
    coef[off] = -2.0 * err[off] / (latency[off] * np.maximum(dist[off], 1e-12))
    grad = (coef[:, :, None] * diff).sum(axis=1)
    return loss, grad.ravel()


def _host_loss(x: FloatArray, anchors: FloatArray, latency: FloatArray) -> tuple[float, FloatArray]:
    diff = x[None, :] - anchors
    dist = np.sqrt((diff**2).sum(axis=1))
    err = (latency - dist) / latency
    coef = -2.0 * err / (latency * np.maximum(dist, 1e-12))
    return float((err**2).sum()), (coef[:, None] * diff).sum(axis=0)


def _minimize(fun: Any, x0: FloatArray, method: str) -> tuple[float, FloatArray]:
    from scipy.optimize import minimize  # here: scipy costs every crawl ~30 MiB and a second to import

    if method == "Nelder-Mead":
        res = minimize(
            lambda v: fun(v)[0],
            x0,
            method="Nelder-Mead",
            options={"maxiter": 400 * x0.size, "xatol": 1e-9, "fatol": 1e-12},
        )
    else:
        res = minimize(fun, x0, jac=True, method="L-BFGS-B", options={"maxiter": 2000})
    return float(res.fun), np.asarray(res.x, dtype=np.float64)


def fit_landmarks(
    latency: FloatArray,
    dims: int,
    rng: np.random.Generator,
    restarts: int = 2,
    method: str = "L-BFGS-B",
) -> FloatArray:
    """Landmark coordinates ``(L, dims)`` from their symmetric ``L x L`` latencies."""
    lat = np.asarray(latency, dtype=np.float64)
    _check_method(method, dims)
    if lat.ndim != 2 or lat.shape[0] != lat.shape[1] or lat.shape[0] < 2:
        raise AnalysisError(f"landmark latencies must be a square matrix of >= 2, got {lat.shape}")
    off = ~np.eye(lat.shape[0], dtype=bool)
    _check_positive(lat[off], "landmark latencies between distinct landmarks")
    lat = 0.5 * (lat + lat.T)
    n = lat.shape[0]
    scale = float(np.median(lat[off]))
    starts = [_mds(lat, dims).ravel()]
    starts += [rng.normal(0.0, scale, n * dims) for _ in range(restarts)]
    best_loss, best_x = np.inf, starts[0]
    for x0 in starts:
        loss, x = _minimize(lambda v: _landmark_loss(v, lat, dims), x0, method)
        if loss < best_loss:
            best_loss, best_x = loss, x
    return best_x.reshape(n, dims)


def _completed(lat: FloatArray) -> FloatArray:
    """A full (A+B) x (A+B) matrix from A x B latencies: within-side distances guessed
    as the midpoint of their triangle bounds (a start point for the fit, nothing more)."""
    def side(m: FloatArray) -> FloatArray:
        lower = np.abs(m[:, None, :] - m[None, :, :]).max(axis=2)
        upper = (m[:, None, :] + m[None, :, :]).min(axis=2)
        return np.asarray(0.5 * (lower + upper), dtype=np.float64)
    a = lat.shape[0]
    full = np.zeros((a + lat.shape[1],) * 2)
    full[:a, :a], full[a:, a:] = side(lat), side(lat.T)
    full[:a, a:], full[a:, :a] = lat, lat.T
    np.fill_diagonal(full, 0.0)
    return full


def fit_bipartite(latency: FloatArray, dims: int, rng: np.random.Generator,
                  restarts: int = 2) -> tuple[FloatArray, FloatArray]:
    """Coordinates of A vantage points ``(A, dims)`` and B targets ``(B, dims)`` from their
    ``A x B`` latencies only (the live cluster: nodes measure landmark hosts, never each other)."""
    lat = np.asarray(latency, dtype=np.float64)
    _check_method("L-BFGS-B", dims)
    if lat.ndim != 2 or lat.shape[0] < 2 or lat.shape[1] < 2:
        raise AnalysisError(f"bipartite latencies must be at least 2 x 2, got {lat.shape}")
    _check_positive(lat, "latencies from nodes to landmarks")
    a, b = lat.shape

    def loss(flat: FloatArray) -> tuple[float, FloatArray]:
        x = flat.reshape(-1, dims)
        diff = x[:a, None, :] - x[None, a:, :]
        dist = np.sqrt((diff**2).sum(axis=2))
        err = (lat - dist) / lat
        coef = (-2.0 * err / (lat * np.maximum(dist, 1e-12)))[:, :, None] * diff
        return float((err**2).sum()), np.vstack([coef.sum(axis=1), -coef.sum(axis=0)]).ravel()

    scale = float(np.median(lat))
    starts = [_mds(_completed(lat), dims).ravel()]
    starts += [rng.normal(0.0, scale, (a + b) * dims) for _ in range(restarts)]
    best_loss, best_x = np.inf, starts[0]
    for x0 in starts:
        value, x = _minimize(loss, x0, "L-BFGS-B")
        if value < best_loss:
            best_loss, best_x = value, x
    coords = best_x.reshape(a + b, dims)
    return coords[:a], coords[a:]


def _multilaterate(anchors: FloatArray, lat: FloatArray) -> FloatArray:
    """Linear least-squares positions (exact for Euclidean latencies): the start point.

    Subtracting anchor 0's sphere equation from the others leaves a linear system
    ``2 (a_l - a_0) . x = |a_l|^2 - |a_0|^2 - d_l^2 + d_0^2``, solved for all hosts at once.
    """
    a0 = anchors[0]
    lhs = 2.0 * (anchors[1:] - a0)
    norms = (anchors**2).sum(axis=1)
    rhs = (norms[1:] - norms[0])[None, :] - lat[:, 1:] ** 2 + lat[:, :1] ** 2
    solution, *_ = np.linalg.lstsq(lhs, rhs.T, rcond=None)
    return np.asarray(solution.T, dtype=np.float64)


def place(
    landmarks: FloatArray,
    latency_to_landmarks: FloatArray,
    rng: np.random.Generator,
    restarts: int = 1,
    method: str = "L-BFGS-B",
) -> FloatArray:
    """Coordinates of hosts from their latencies to the landmarks.

    ``latency_to_landmarks`` is ``(L,)`` for one host or ``(H, L)`` for many;
    the result is ``(dims,)`` or ``(H, dims)`` accordingly.
    """
    anchors = np.asarray(landmarks, dtype=np.float64)
    lat = np.asarray(latency_to_landmarks, dtype=np.float64)
    single = lat.ndim == 1
    lat2 = lat[None, :] if single else lat
    if anchors.ndim != 2 or lat2.ndim != 2 or lat2.shape[1] != anchors.shape[0]:
        raise AnalysisError(
            f"latencies {lat.shape} do not match {anchors.shape[0]} landmarks"
        )
    _check_method(method, anchors.shape[1])
    _check_positive(lat2, "latencies to landmarks")
    scale = float(np.median(lat2))
    starts = [_multilaterate(anchors, lat2)]
    starts += [anchors.mean(axis=0) + rng.normal(0.0, scale, (lat2.shape[0], anchors.shape[1]))
               for _ in range(restarts)]
    fits = [_place_all(anchors, lat2, start, method) for start in starts]
    losses = np.stack([_hosts_losses(fit, anchors, lat2) for fit in fits])
    best = np.argmin(losses, axis=0)  # per host, the start that fitted it best
    out = np.asarray(np.stack(fits)[best, np.arange(lat2.shape[0])], dtype=np.float64)
    return np.asarray(out[0]) if single else out


def _hosts_losses(x: FloatArray, anchors: FloatArray, lat: FloatArray) -> FloatArray:
    dist = np.sqrt(((x[:, None, :] - anchors[None, :, :]) ** 2).sum(axis=2))
    return np.asarray((((lat - dist) / lat) ** 2).sum(axis=1), dtype=np.float64)


def _place_all(anchors: FloatArray, lat: FloatArray, start: FloatArray, method: str) -> FloatArray:
    """Every host's position. The loss is separable by host, so one L-BFGS-B run over all
    of them finds each host's own optimum; Nelder-Mead runs host by host."""
    dims = anchors.shape[1]
    if method == "Nelder-Mead":
        return np.stack([_minimize(lambda v, r=row: _host_loss(v, anchors, r), x0, method)[1]
                         for row, x0 in zip(lat, start, strict=True)])

    def loss(flat: FloatArray) -> tuple[float, FloatArray]:
        x = flat.reshape(-1, dims)
        diff = x[:, None, :] - anchors[None, :, :]
        dist = np.sqrt((diff**2).sum(axis=2))
        err = (lat - dist) / lat
        coef = -2.0 * err / (lat * np.maximum(dist, 1e-12))
        return float((err**2).sum()), (coef[:, :, None] * diff).sum(axis=1).ravel()

    from scipy.optimize import minimize  # see _minimize

    res = minimize(loss, start.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "ftol": 1e-15, "gtol": 1e-10})
    return np.asarray(res.x, dtype=np.float64).reshape(-1, dims)


def predict(a: FloatArray, b: FloatArray) -> FloatArray | float:
    """Estimated latency: Euclidean distance (broadcasts over leading axes)."""
    d = np.sqrt(((np.asarray(a) - np.asarray(b)) ** 2).sum(axis=-1))
    return float(d) if np.ndim(d) == 0 else np.asarray(d, dtype=np.float64)


def relative_errors(measured: FloatArray, predicted: FloatArray) -> FloatArray:
    """``|predicted - measured| / measured``, elementwise."""
    m = np.asarray(measured, dtype=np.float64)
    _check_positive(m, "measured latencies")
    return np.asarray(np.abs(np.asarray(predicted) - m) / m, dtype=np.float64)


def top_k_nearest(site_coord: FloatArray, node_coords: FloatArray, k: int) -> NDArray[np.int64]:
    """Indices of the ``k`` nodes nearest to the site, nearest first (ties: lower index)."""
    nodes = np.asarray(node_coords, dtype=np.float64)
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    if nodes.ndim != 2 or nodes.shape[0] == 0:
        raise AnalysisError("node coordinates must be a non-empty (N, dims) array")
    dist = np.sqrt(((nodes - np.asarray(site_coord)[None, :]) ** 2).sum(axis=1))
    return np.argsort(dist, kind="stable")[: min(k, nodes.shape[0])].astype(np.int64)


def choose_node(
    site_coord: FloatArray, node_coords: FloatArray, k: int, rng: np.random.Generator
) -> int:
    """One of the site's ``k`` nearest nodes, uniformly at random (the study's TopK)."""
    nearest = top_k_nearest(site_coord, node_coords, k)
    return int(nearest[int(rng.integers(nearest.shape[0]))])


def choose_least_loaded(site_coord: FloatArray, node_coords: FloatArray, k: int, load: Sequence[float]) -> int:
    """The least loaded of the site's ``k`` nearest nodes (ties: the nearer): Top-K with load balance.

    ``load[i]`` is node ``i``'s load (e.g. the sites already given to it). Deterministic:
    the same coordinates and loads give the same node on every caller.
    """
    nearest = top_k_nearest(site_coord, node_coords, k)
    if len(load) != np.asarray(node_coords).shape[0]:
        raise AnalysisError("one load per node is needed")
    return int(min(nearest, key=lambda i: load[int(i)]))  # min keeps the first (nearest) of equal loads


def filter_samples(samples: Sequence[float] | FloatArray, modulus: float, keep: int = 3) -> float:
    """Weighted mean of httpping samples: bucket by ``modulus``, keep the ``keep`` fullest.

    Samples fall in bucket ``floor(sample / modulus)``; the ``keep`` buckets
    with the most samples (ties: the lower-latency bucket) are kept and all
    samples in them averaged, so each kept bucket weighs by its count. Outliers
    (a retransmit, a queueing spike) land in sparse buckets and drop out. A
    bucket holding a single sample is no mode: it is kept only when no bucket
    holds two (otherwise a lone spike would fill the third place whenever the
    good samples span fewer than ``keep`` buckets).
    """
    values = np.asarray(samples, dtype=np.float64)
    if modulus <= 0 or keep < 1:
        raise ConfigError(f"modulus must be > 0 and keep >= 1, got {modulus}, {keep}")
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise AnalysisError("httpping samples must be a non-empty set of finite values >= 0")
    buckets = np.floor(values / modulus).astype(np.int64)
    ids, counts = np.unique(buckets, return_counts=True)  # ids ascending
    if counts.max() >= 2:
        ids, counts = ids[counts >= 2], counts[counts >= 2]
    chosen = ids[np.argsort(-counts, kind="stable")[:keep]]
    return float(values[np.isin(buckets, chosen)].mean())
