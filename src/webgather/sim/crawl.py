"""The distributed crawl simulated for 1..n nodes: pages over time and speed-up. Pure.

Runs :func:`webgather.sim.des.simulate` for each node count with the same page
costs (seeded) and the two-stage partition, and reports, per node count:

* ``pages@T`` pages fetched by the horizon T and ``speedup@T = pages_n(T) / pages_1(T)``
  (the documents' Table 2 measure, "pages after 10 hours"). Unless given, T is the
  time one node needs to fetch ``reachable / (2 * max n)`` pages, so that the
  largest cluster, scaling perfectly, would fetch half the reachable pages by T
  and never runs out of pages to fetch before T.
* ``t50`` the time to fetch half of the reachable pages and its speed-up.
* slot and CPU utilization up to the end of the crawl, cross-URL messages per page.
* the per-interval load variance of the raw per-node shares (documents' Table 1),
  with ``n_intervals`` intervals ("hours") up to T.

Where scaling stops: one node with all slots busy fetches ``concurrency / mean
fetch time`` pages/s; politeness lets the whole cluster fetch at most ``hosts /
(politeness + mean fetch time)`` pages/s, so beyond the ratio of the two, nodes
add nothing (and fewer hosts have work early in a breadth-first crawl).
:func:`host_bound_s` is the shortest time in which the biggest host can be
crawled at all (its pages one at a time with the politeness gaps): no number of
nodes finishes the crawl sooner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from webgather.cluster.mapping import DEFAULT_BUCKETS
from webgather.errors import ConfigError
from webgather.linkgraph import LinkGraph
from webgather.sim.des import CrawlParams, CrawlRun, page_costs, simulate
from webgather.sim.partition import host_owner, keys_of
from webgather.sim.tables import render
from webgather.sim.traces import adjacency, bfs_order, default_seeds

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DOC_SPEEDUP", "CrawlResult", "SpeedupRow", "host_bound_s", "plot", "run", "table"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
DOC_SPEEDUP = {2: 1.71, 4: 3.36, 8: 5.97, 16: 11.72}
"""WebGather 2.0's simulated speed-ups after 10 hours (Table 2)."""


@dataclass(frozen=True)
class SpeedupRow:
    n: int
    pages_at_horizon: int
    speedup: float
    t50_s: float
    speedup_t50: float
    slot_util: float
    cpu_util: float
    msgs_per_page: float
    cross_per_page: float
    interval_var_mean: float
    interval_var_max: float
    end_s: float


@dataclass(frozen=True)
class CrawlResult:
    rows: tuple[SpeedupRow, ...]
    horizon_s: float
    reachable: int
    host_bound_s: float
    politeness_pages_per_s: float
    """Most pages/s any cluster can fetch: every reached host once per (politeness + mean fetch)."""
    node_pages_per_s: float
    """Pages/s of one node whose slots are all busy: concurrency / mean fetch time."""
    curves: dict[int, FloatArray] = field(repr=False)
    """Per node count: fetch completion times, ascending."""


def host_bound_s(graph: LinkGraph, costs: FloatArray, pages: IntArray, politeness_s: float) -> float:
    """Lower bound on any crawl of ``pages``: the slowest host, fetched back to back."""
    hosts = np.asarray(graph.page_host, dtype=np.int64)[pages]
    per_host = np.bincount(hosts, weights=costs[pages] + politeness_s)
    return float(per_host.max() - politeness_s) if per_host.size else 0.0


def _interval_var(run: CrawlRun, horizon_s: float, n_intervals: int) -> tuple[float, float]:
    if run.n_nodes == 1:
        return 0.0, 0.0
    keep = run.fetch_time <= horizon_s
    interval = np.minimum((run.fetch_time[keep] / horizon_s * n_intervals).astype(np.int64),
                          n_intervals - 1)
    counts = np.bincount(interval * run.n_nodes + run.fetch_node[keep],
                         minlength=n_intervals * run.n_nodes).reshape(n_intervals, run.n_nodes)
    totals = counts.sum(axis=1, keepdims=True)
    valid = totals[:, 0] > 0
    share = counts[valid] / totals[valid]
    var = share.var(axis=1)
    return (float(var.mean()), float(var.max())) if var.size else (0.0, 0.0)


def _t_at(times: FloatArray, count: int) -> float:
    return float(times[count - 1]) if 0 < count <= times.size else float("inf")


def _row(run: CrawlRun, base: CrawlRun, horizon_s: float, half: int, params: CrawlParams,
         n_intervals: int) -> SpeedupRow:
    pages_t = int(np.searchsorted(run.fetch_time, horizon_s, side="right"))
    base_t = int(np.searchsorted(base.fetch_time, horizon_s, side="right"))
    t50, base_t50 = _t_at(run.fetch_time, half), _t_at(base.fetch_time, half)
    end = max(run.end_time, 1e-9)
    fetched = max(1, run.fetch_time.size)
    var_mean, var_max = _interval_var(run, horizon_s, n_intervals)
    return SpeedupRow(
        run.n_nodes, pages_t, pages_t / max(1, base_t), t50, base_t50 / t50 if t50 > 0 else 0.0,
        float(run.busy_slot_s.sum() / (run.n_nodes * params.concurrency * end)),
        float(run.cpu_busy_s.sum() / (run.n_nodes * end)), run.messages / fetched,
        run.cross_urls / fetched, var_mean, var_max, run.end_time)


def run(graph: LinkGraph, nodes: Sequence[int] = (1, 2, 4, 8, 16),
        params: CrawlParams | None = None, seed: int = 0, seeds: Sequence[int] | None = None,
        horizon_s: float | None = None, n_buckets: int = DEFAULT_BUCKETS,
        n_intervals: int = 10) -> CrawlResult:
    """Simulate the crawl for every node count (1 is always included as the baseline)."""
    params = params or CrawlParams()
    counts = sorted(set(nodes) | {1})
    if counts[0] < 1 or n_intervals < 1:
        raise ConfigError("node counts and n_intervals must be >= 1")
    adj = adjacency(graph)
    seed_pages = default_seeds(graph) if seeds is None else np.asarray(seeds, dtype=np.int64)
    reachable = bfs_order(graph, seed_pages, adj)
    costs = page_costs(graph, params, np.random.default_rng(seed))
    keys = keys_of(graph)
    runs: dict[int, CrawlRun] = {}
    for n in counts:
        owner = host_owner(keys, "two-stage", n, n_buckets) if n > 1 else np.zeros(graph.n_hosts, np.int64)
        runs[n] = simulate(graph, owner, seed_pages, params, costs, adj=adj)
    base = runs[1]
    if horizon_s is None:
        horizon_s = _t_at(base.fetch_time, max(1, reachable.size // (2 * counts[-1])))
    half = max(1, reachable.size // 2)
    rows = tuple(_row(runs[n], base, horizon_s, half, params, n_intervals) for n in counts)
    bound = host_bound_s(graph, costs, reachable, params.politeness_s)
    mean_cost = float(costs[reachable].mean())
    hosts = np.unique(np.asarray(graph.page_host, dtype=np.int64)[reachable]).size
    return CrawlResult(rows, horizon_s, int(reachable.size), bound,
                       hosts / (params.politeness_s + mean_cost), params.concurrency / mean_cost,
                       {n: r.fetch_time for n, r in runs.items()})


def table(result: CrawlResult) -> str:
    """Speed-up, utilization, traffic and load variance per node count."""
    headers = ["n", "pages@T", "speedup@T", "doc_speedup", "t50_s", "speedup_t50", "slot_util",
               "cpu_util", "msgs/page", "cross/page", "interval_var_mean", "interval_var_max", "end_s"]
    body = [[r.n, r.pages_at_horizon, r.speedup, DOC_SPEEDUP.get(r.n, float("nan")), r.t50_s,
             r.speedup_t50, r.slot_util, r.cpu_util, r.msgs_per_page, r.cross_per_page,
             r.interval_var_mean, r.interval_var_max, r.end_s] for r in result.rows]
    ratio = result.politeness_pages_per_s / result.node_pages_per_s
    title = (f"crawl: {result.reachable:,} reachable pages; horizon T = {result.horizon_s:,.0f} s; "
             f"slowest host alone needs {result.host_bound_s:,.0f} s (no cluster can finish sooner)\n"
             f"one busy node: {result.node_pages_per_s:,.1f} pages/s; politeness allows at most "
             f"{result.politeness_pages_per_s:,.1f} pages/s in all, so scaling stops near n = {ratio:.1f}")
    return render(headers, body, title)


def plot(result: CrawlResult, fig: Figure) -> None:
    """Left: pages fetched over time per node count; right: speed-up against n."""
    left, right = fig.subplots(1, 2)
    for n, times in result.curves.items():
        left.plot(times, np.arange(1, times.size + 1), label=f"{n} node{'s' if n > 1 else ''}")
    left.axvline(result.horizon_s, color="grey", linestyle=":", label="T")
    left.set_xlabel("simulated time (s)")
    left.set_ylabel("pages fetched")
    left.legend(fontsize="small")
    ns = [r.n for r in result.rows]
    right.plot(ns, [r.speedup for r in result.rows], marker="o", label="speed-up at T")
    right.plot(ns, [r.speedup_t50 for r in result.rows], marker="s", label="speed-up to 50%")
    doc = sorted(DOC_SPEEDUP.items())
    right.plot([k for k, _ in doc], [v for _, v in doc], marker="^", label="WebGather 2.0 (doc)")
    right.plot(ns, ns, linestyle="--", color="grey", label="linear")
    right.set_xlabel("nodes")
    right.set_ylabel("speed-up vs one node")
    right.legend(fontsize="small")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    fig.suptitle("Distributed crawl (discrete-event simulation)")
