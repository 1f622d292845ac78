"""Load balance of a cluster crawl: each node's share of the pages per interval. Pure.

The documents' Table 1 definition: in interval ``t`` node ``i`` fetched
``p_i(t)`` pages out of ``P(t) = sum_i p_i(t)``; its normalized share is
``s_i(t) = n * p_i(t) / P(t)`` (1 = a fair share with ``n`` nodes), and the
load variance of the interval is the population variance of the ``s_i(t)``
over the nodes (``mean((s_i - 1)^2)``). Intervals without pages have no
variance (None). Pages are fetches in the crawl log's sense
(:meth:`~webgather.analysis.fetchlog.FetchTable.fetches`), placed by
``fetched_at`` (the last instant belongs to the last interval).

The interval is ``interval_s`` when given; otherwise an hour when the crawl
lasted at least ten hours (the documents' per-hour figures), else a tenth of
the crawl's duration (so a short crawl still shows ten intervals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from webgather.analysis.fetchlog import FetchTable
from webgather.errors import AnalysisError

__all__ = ["MAX_INTERVALS", "NodeLoad", "choose_interval_s", "node_load"]

MAX_INTERVALS = 100_000

_HOUR_S = 3600.0
_INTERVALS_IF_SHORT = 10


@dataclass(frozen=True)
class NodeLoad:
    nodes: tuple[str, ...]
    interval_s: float
    start: float
    """fetched_at of the first fetch (seconds since the epoch)."""
    pages: list[list[int]]
    """pages[t][i]: fetches of node i in interval t."""
    variance: list[float | None]
    """Load variance per interval."""
    mean_variance: float | None
    max_variance: float | None
    total_per_node: list[int]
    overall_share: list[float]
    """n * node's pages / all pages, over the whole crawl."""


def choose_interval_s(span_s: float) -> float:
    """An hour for crawls of ten hours or more, else a tenth of the duration."""
    if span_s >= _INTERVALS_IF_SHORT * _HOUR_S:
        return _HOUR_S
    return span_s / _INTERVALS_IF_SHORT if span_s > 0 else 1.0


def node_load(table: FetchTable, interval_s: float | None = None) -> NodeLoad | None:
    """Per-node pages per interval and the load variance; None without fetches."""
    if interval_s is not None and not (interval_s > 0 and math.isfinite(interval_s)):
        raise AnalysisError(f"interval_s must be a positive number of seconds, not {interval_s}")
    mask = table.fetches()
    if not mask.any():
        return None
    times = table.fetched_at[mask]
    nodes = table.node[mask]
    start = float(times.min())
    step = interval_s if interval_s is not None else choose_interval_s(float(times.max()) - start)
    n_slots = max(1, math.ceil((float(times.max()) - start) / step))
    slot = np.minimum(np.floor((times - start) / step).astype(np.int64), n_slots - 1)
    n_nodes = len(table.node_names)
    if n_slots > MAX_INTERVALS:
        raise AnalysisError(f"{n_slots} intervals of {step} s: more than {MAX_INTERVALS}; use a longer interval")
    flat = np.bincount(slot * n_nodes + nodes, minlength=n_slots * n_nodes)
    counts = flat.reshape(n_slots, n_nodes).astype(np.int64)
    totals = counts.sum(axis=1)
    variance: list[float | None] = []
    for row, total in zip(counts, totals):
        if total == 0:
            variance.append(None)
            continue
        shares = n_nodes * row / total
        variance.append(float(np.mean((shares - 1.0) ** 2)))
    known = [v for v in variance if v is not None]
    per_node = counts.sum(axis=0)
    return NodeLoad(
        nodes=table.node_names,
        interval_s=float(step),
        start=start,
        pages=counts.tolist(),
        variance=variance,
        mean_variance=float(np.mean(known)) if known else None,
        max_variance=float(np.max(known)) if known else None,
        total_per_node=[int(x) for x in per_node],
        overall_share=[float(n_nodes * x / per_node.sum()) for x in per_node],
    )
