"""The status page's figures (``webgather status serve``) from what a cluster publishes. Pure.

Input is what ``webgather cluster status`` reads: the live members' heartbeat
info (``runtime.member.figures.node_info``), the bucket table and the crawl's
counters, plus the reader's wall clock ``now``. Output is one typed
:class:`ClusterStatus`, which the page renders (:mod:`webgather.cluster.status_html`)
and ``/status.json`` serves as it is (:func:`status_record`).

Figures and where they come from:

* per node: alive (a heartbeat within ``member_ttl_s``; a node that owns
  buckets in the table and has none is *missing*), state, buckets owned (the
  table), pages, pages/s over its last complete interval, queued, in flight;
* pages/s over time: the nodes' pages per load interval (``intervals``, counted
  from the crawl's epoch on every node) summed, for the last
  :data:`HISTORY_INTERVALS` complete intervals (the interval under way is
  partial and left out; intervals without pages are zeros);
* load variance: ``var_share`` of :func:`webgather.cluster.status.interval_load`
  (the documents' Table 1) per complete interval with two nodes or more: the
  last one and the mean over the history window;
* errors by kind: the nodes' ``errors`` summed; busiest hosts: the nodes'
  ``hosts`` (each node's top ten, with the Space-Saving overcount of
  ``runtime.engine.host_tally``) summed per host, top :data:`TOP_HOSTS`;
* losses: the crawl-wide counters ``unrecoverable_buckets`` and
  ``buckets_started_empty`` (``runtime.durability.losses``), shown in red.

Figures of nodes that are no longer alive are gone with their heartbeat.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from webgather.cluster.mapping import BucketTable
from webgather.cluster.status import interval_load

__all__ = ["HISTORY_INTERVALS", "LOSS_COUNTERS", "TOP_HOSTS", "ClusterStatus", "HostRow", "NodeRow", "RatePoint",
           "build_status", "status_record"]

HISTORY_INTERVALS = 60
"""Complete load intervals shown in the pages/s chart."""
TOP_HOSTS = 10
LOSS_COUNTERS = ("unrecoverable_buckets", "buckets_started_empty")
"""The names ``runtime.durability.losses`` counts (that layer sits above this one)."""


@dataclasses.dataclass(frozen=True, slots=True)
class NodeRow:
    node: str
    alive: bool
    """A heartbeat is present (False: the table gives it buckets, its heartbeat expired)."""
    state: str
    """busy, idle, leaving, with " (handing over)" while its table is not applied; or missing."""
    idle: bool
    buckets: int
    pages: int
    pages_per_s: float
    """Over the node's last complete interval."""
    queued: int
    in_flight: int
    heartbeat_age_s: float | None
    """How old the node's last heartbeat info is, by the reader's clock (None: missing)."""


@dataclasses.dataclass(frozen=True, slots=True)
class RatePoint:
    interval: int
    """Interval number k: [epoch + k * interval_s, epoch + (k + 1) * interval_s)."""
    start_s: float
    """Seconds from the crawl's epoch to the interval's start."""
    pages_per_s: float
    """All live nodes together."""
    var_share: float | None
    """Variance of the nodes' shares of the interval's pages (None: fewer than two nodes counted)."""


@dataclasses.dataclass(frozen=True, slots=True)
class HostRow:
    host: str
    pages: int
    overcount: int
    """The count is at most this much above the truth (0: exact)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterStatus:
    crawl: str
    now: float
    """The reader's wall clock (Unix seconds)."""
    table_version: int | None
    n_buckets: int | None
    runs: int
    done: int
    finished: bool
    """Every run of the crawl has ended (``done >= runs``)."""
    nodes: tuple[NodeRow, ...]
    pages: int
    """Pages of the live nodes (since each started)."""
    pages_per_s: float
    """All live nodes over the last complete interval."""
    interval_s: float
    history: tuple[RatePoint, ...]
    var_share_last: float | None
    var_share_mean: float | None
    errors: tuple[tuple[str, int], ...]
    """By kind, most frequent first."""
    busiest: tuple[HostRow, ...]
    losses: tuple[tuple[str, int], ...]
    """Loss counters above zero: the crawl lost buckets' state (see runtime.durability.losses)."""
    recovery: tuple[tuple[str, int], ...]
    ended: str = ""
    """Set when the figures are the ended crawl's last state from its summaries, not live ones: where they
    come from (see :mod:`webgather.cluster.status_final`)."""


def build_status(crawl: str, members: Mapping[str, Mapping[str, Any]], table: BucketTable | None,
                 counters: Mapping[str, int], now: float) -> ClusterStatus:
    """The page's figures (module docstring)."""
    interval_s = next((s for info in members.values() if (s := _float(info.get("interval_s"))) > 0), 0.0)
    epoch = next((_float(info.get("epoch")) for info in members.values()), 0.0)
    history = _history(members, interval_s, epoch, now)
    shares = [p.var_share for p in history if p.var_share is not None]
    runs, done = int(counters.get("runs", 0)), int(counters.get("done", 0))
    return ClusterStatus(
        crawl=crawl, now=round(now, 3), table_version=table.version if table else None,
        n_buckets=table.n_buckets if table else None, runs=runs, done=done, finished=runs > 0 and done >= runs,
        nodes=_nodes(members, table, now), pages=sum(_int(i.get("pages")) for i in members.values()),
        pages_per_s=history[-1].pages_per_s if history else 0.0, interval_s=interval_s, history=history,
        var_share_last=shares[-1] if shares else None,
        var_share_mean=sum(shares) / len(shares) if shares else None,
        errors=_errors(members), busiest=_busiest(members),
        losses=tuple((k, int(counters[k])) for k in LOSS_COUNTERS if int(counters.get(k, 0)) > 0),
        recovery=tuple(sorted((k, int(v)) for k, v in counters.items()
                              if k.startswith(("recovered", "unrecoverable", "buckets_started")))),
    )


def status_record(status: ClusterStatus) -> dict[str, Any]:
    """What ``/status.json`` serves: the status as plain JSON values."""
    return dataclasses.asdict(status)


def _nodes(members: Mapping[str, Mapping[str, Any]], table: BucketTable | None, now: float) -> tuple[NodeRow, ...]:
    owned = table.shares() if table is not None else {}
    rows = []
    for node in sorted(set(members) | set(owned)):
        info = members.get(node)
        if info is None:
            rows.append(NodeRow(node, False, "missing", False, owned.get(node, 0), 0, 0.0, 0, 0, None))
            continue
        idle = bool(info.get("idle"))
        state = "leaving" if info.get("leaving") else "idle" if idle else "busy"
        state += "" if info.get("applied", True) else " (handing over)"
        rows.append(NodeRow(node, True, state, idle, owned.get(node, 0), _int(info.get("pages")), _node_rate(info),
                            _int(info.get("queued")), _int(info.get("in_flight")),
                            round(max(0.0, now - _float(info.get("wall"))), 3)))
    return tuple(rows)


def _node_rate(info: Mapping[str, Any]) -> float:
    """Pages/s over the node's last complete interval, by its own clock (as ``cluster status``)."""
    interval_s = _float(info.get("interval_s"))
    if interval_s <= 0:
        return 0.0
    now_k = math.floor((_float(info.get("wall")) - _float(info.get("epoch"))) / interval_s)
    return round(_intervals(info).get(now_k - 1, 0) / interval_s, 3)


def _history(members: Mapping[str, Mapping[str, Any]], interval_s: float, epoch: float,
             now: float) -> tuple[RatePoint, ...]:
    if interval_s <= 0 or not members:
        return ()
    per_node = {node: _intervals(info) for node, info in members.items()}
    current = math.floor((now - epoch) / interval_s)
    first = min((k for per in per_node.values() for k in per), default=current)
    ks = range(max(first, current - HISTORY_INTERVALS), current)
    variance = {int(row["interval"]): float(row["var_share"]) for row in interval_load(per_node)
                if len(row["pages"]) > 1}
    return tuple(RatePoint(k, round(k * interval_s, 3),
                           round(sum(per.get(k, 0) for per in per_node.values()) / interval_s, 3), variance.get(k))
                 for k in ks)


def _errors(members: Mapping[str, Mapping[str, Any]]) -> tuple[tuple[str, int], ...]:
    total: Counter[str] = Counter()
    for info in members.values():
        errors = info.get("errors")
        if isinstance(errors, Mapping):
            total.update({str(kind): _int(n) for kind, n in errors.items()})
    return tuple(sorted(((k, n) for k, n in total.items() if n), key=lambda kn: (-kn[1], kn[0])))


def _busiest(members: Mapping[str, Mapping[str, Any]]) -> tuple[HostRow, ...]:
    pages: Counter[str] = Counter()
    over: Counter[str] = Counter()
    for info in members.values():
        hosts = info.get("hosts")
        for entry in hosts if isinstance(hosts, list) else []:
            if isinstance(entry, list) and len(entry) == 3:
                pages[str(entry[0])] += _int(entry[1])
                over[str(entry[0])] += _int(entry[2])
    best = sorted(pages.items(), key=lambda hp: (-hp[1], hp[0]))[:TOP_HOSTS]
    return tuple(HostRow(host, n, over[host]) for host, n in best)


def _intervals(info: Mapping[str, Any]) -> dict[int, int]:
    raw = info.get("intervals")
    if not isinstance(raw, Mapping):
        return {}
    return {int(k): _int(v) for k, v in raw.items() if str(k).lstrip("-").isdigit()}


def _int(value: Any) -> int:
    """A published count; anything else (another version's field, a missing one) counts 0."""
    return int(_float(value))


def _float(value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else 0.0
