"""GNP assignment of one host (``--partition-by gnp``): coordinates -> K nearest nodes -> a bucket. Pure.

* :func:`node_coordinates`: every node's probe (its filtered httpping to each
  landmark host) -> node coordinates, by :func:`webgather.gnp.fit_bipartite`
  (nodes and landmarks fitted together: nodes never measure each other).
* :func:`choose_placement`: the host's filtered httpping from the nodes that
  measured it places it (:func:`webgather.gnp.place`, the nodes as anchors);
  the nodes that own buckets and have coordinates are the candidates; the host
  goes to the least loaded of its ``k`` nearest (the study's TopK: Top1 is the
  nearest, Top3 spreads a city's hosts over its nodes for balance; the load is
  the hosts GNP gave each node so far, ties go to the nearer node); the
  bucket is one of that node's buckets, by the host's fingerprint (so a node's
  GNP hosts spread over its buckets, and a later join or leave moves a share of
  them, not all).
* :func:`fallback`: the two-stage mapping's bucket, for a host nobody measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from webgather import gnp
from webgather.cluster.mapping import BucketTable, bucket_of
from webgather.cluster.positions import Placement
from webgather.errors import AnalysisError
from webgather.urls import fingerprint

__all__ = ["choose_placement", "fallback", "node_coordinates"]

FloatArray = NDArray[np.float64]


def fallback(host: str, n_buckets: int) -> Placement:
    """The two-stage mapping's placement of a host (no node chosen)."""
    return Placement(bucket_of(host, n_buckets))


def node_coordinates(probes: Mapping[str, Sequence[float]], n_landmarks: int, dims: int,
                     rng: np.random.Generator) -> dict[str, FloatArray]:
    """Coordinates of every node with a complete probe (empty if fewer than two have one)."""
    nodes = sorted(n for n, p in probes.items() if len(p) == n_landmarks)
    if len(nodes) < 2 or n_landmarks < 2:
        return {}
    try:
        coords, _landmarks = gnp.fit_bipartite(np.array([probes[n] for n in nodes]), dims, rng)
    except AnalysisError:
        return {}
    return {node: coords[i] for i, node in enumerate(nodes)}


def choose_placement(host: str, measured_ms: Mapping[str, float], coords: Mapping[str, FloatArray],
                     table: BucketTable, k: int, rng: np.random.Generator, *,
                     load: Mapping[str, float] | None = None) -> Placement | None:
    """The host's placement, or None when too few nodes measured it (the caller waits or falls back).
    ``load``: node -> hosts given to it so far (missing: 0)."""
    candidates = [n for n in table.nodes if n in coords]
    if not candidates:
        lone = table.nodes
        return _in_node(host, lone[0], table, ()) if len(lone) == 1 else None
    if len(candidates) == 1 and len(table.nodes) == 1:
        return _in_node(host, candidates[0], table, ())
    anchors = [n for n in sorted(measured_ms) if n in coords]
    dims = next(iter(coords.values())).shape[0]
    if len(anchors) < min(dims + 1, len(coords)) or len(anchors) < 2:
        return None
    site = gnp.place(np.stack([coords[a] for a in anchors]), np.array([measured_ms[a] for a in anchors]),
                     rng, restarts=0)
    loads = [float((load or {}).get(c, 0.0)) for c in candidates]
    chosen = candidates[gnp.choose_least_loaded(site, np.stack([coords[c] for c in candidates]), k, loads)]
    return _in_node(host, chosen, table, tuple(float(x) for x in site))


def _in_node(host: str, node: str, table: BucketTable, coord: tuple[float, ...]) -> Placement:
    buckets = table.buckets_of(node)
    return Placement(buckets[fingerprint(host) % len(buckets)], node, coord)
