"""The status page's figures of a crawl that has ended, from the summaries it left. Pure.

A ``--workers`` crawl stops its embedded Redis when it ends, and every node's
heartbeat expires with it, so the live figures of
:mod:`webgather.cluster.status_model` are gone at the moment they matter most.
What is left is the crawl directory: the merged ``summary.json`` and each
node's ``nodes/NODE/summary.json``. :func:`final_status` turns them into the
same :class:`ClusterStatus` the page renders, with ``ended`` saying so:

* per node: its pages, pages/s over its run, how it ended (``end``), what it
  left queued (``frontier.queued``); no node is alive, none owns buckets;
* pages/s over time: the nodes' ``pages_per_interval`` (counted from the
  crawl's epoch on every node) summed, the last :data:`HISTORY_INTERVALS`;
* errors by kind and losses: the merged summary's; busiest hosts are not in a
  summary and stay empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from webgather.cluster.status import interval_load
from webgather.cluster.status_model import HISTORY_INTERVALS, LOSS_COUNTERS, ClusterStatus, NodeRow, RatePoint

__all__ = ["final_status"]


def final_status(crawl: str, merged: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], now: float,
                 source: str) -> ClusterStatus:
    """The ended crawl's last state from its merged summary and its nodes' (``source``: where they were read)."""
    interval_s = _float(merged.get("load", {}).get("interval_s")) if isinstance(merged.get("load"), Mapping) else 0.0
    interval_s = interval_s or next((s for n in nodes.values() if (s := _float(n.get("interval_s"))) > 0), 0.0)
    history = _history(nodes, interval_s)
    shares = [p.var_share for p in history if p.var_share is not None]
    counters = merged.get("counters") if isinstance(merged.get("counters"), Mapping) else {}
    assert isinstance(counters, Mapping)
    finished = bool(merged.get("finished"))
    errors = merged.get("errors") if isinstance(merged.get("errors"), Mapping) else {}
    assert isinstance(errors, Mapping)
    return ClusterStatus(
        crawl=crawl, now=round(now, 3), table_version=None, n_buckets=None,
        runs=int(_float(counters.get("runs", 1))), done=int(_float(counters.get("done", 1 if finished else 0))),
        finished=finished, nodes=tuple(_row(node, nodes[node]) for node in sorted(nodes)),
        pages=int(_float(merged.get("pages"))), pages_per_s=_float(merged.get("pages_per_s")), interval_s=interval_s,
        history=history, var_share_last=shares[-1] if shares else None,
        var_share_mean=sum(shares) / len(shares) if shares else None,
        errors=tuple(sorted(((str(k), int(_float(n))) for k, n in errors.items() if _float(n)),
                            key=lambda kn: (-kn[1], kn[0]))),
        busiest=(), losses=tuple((k, int(_float(counters[k]))) for k in LOSS_COUNTERS if _float(counters.get(k)) > 0),
        recovery=tuple(sorted((str(k), int(_float(v))) for k, v in counters.items()
                              if str(k).startswith(("recovered", "unrecoverable", "buckets_started")))),
        ended=source,
    )


def _row(node: str, summary: Mapping[str, Any]) -> NodeRow:
    frontier = summary.get("frontier") if isinstance(summary.get("frontier"), Mapping) else {}
    assert isinstance(frontier, Mapping)
    return NodeRow(node, False, f"ended: {summary.get('end', '?')}", False, 0, int(_float(summary.get("pages"))),
                   _float(summary.get("pages_per_s")), int(_float(frontier.get("queued"))), 0, None)


def _history(nodes: Mapping[str, Mapping[str, Any]], interval_s: float) -> tuple[RatePoint, ...]:
    per_node = {node: {k: int(_float(v)) for k, v in enumerate(s.get("pages_per_interval") or [])}
                for node, s in nodes.items() if isinstance(s.get("pages_per_interval"), list)}
    end = max((len(s) for s in per_node.values()), default=0)
    if interval_s <= 0 or end == 0:
        return ()
    variance = {int(row["interval"]): float(row["var_share"]) for row in interval_load(per_node)
                if len(row["pages"]) > 1}
    return tuple(RatePoint(k, round(k * interval_s, 3),
                           round(sum(per.get(k, 0) for per in per_node.values()) / interval_s, 3), variance.get(k))
                 for k in range(max(0, end - HISTORY_INTERVALS), end))


def _float(value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else 0.0
