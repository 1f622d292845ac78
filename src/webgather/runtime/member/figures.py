"""What a cluster node publishes with its heartbeat, and its summary (kept apart from ``member.node``)."""

from __future__ import annotations

import resource
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from webgather.runtime.member.node import ClusterNode

__all__ = ["INFO_HOSTS", "INFO_INTERVALS", "node_info", "node_summary"]

INFO_INTERVALS = 120
"""Most recent load intervals published in a node's heartbeat info."""
INFO_HOSTS = 10
"""Busiest hosts published in a node's heartbeat info (``[host, pages, overcount]``, see ``runtime.engine.host_tally``)."""


def node_info(node: ClusterNode, counters: dict[str, int]) -> dict[str, Any]:
    """The heartbeat's info record (``membership.NodeInfo``)."""
    stats, frontier, router = node.parts.stats, node.parts.frontier, node.router.stats
    last = max(stats.per_interval, default=-1)
    return {
        "idle": node.idle(), "activity": node.activity(), "probe": counters.get("probe", 0),
        "version": node.ownership.version, "applied": node.ownership.applied(), "leaving": node.leaving,
        "buckets": len(node.ownership.ready), "pages": stats.pages, "queued": frontier.pending(),
        "in_flight": frontier.in_flight(), "messages": router.messages, "urls_sent": router.urls,
        "bytes_sent": router.bytes, "cache_saved": router.cache_saved, "interval_s": stats.interval_s,
        "epoch": stats.started_at, "wall": round(node.parts.clock.wall(), 3),
        "intervals": {str(k): stats.per_interval[k] for k in range(max(0, last - INFO_INTERVALS + 1), last + 1)
                      if stats.per_interval.get(k)},
        # for the status page (webgather status serve): bounded by the error kinds and INFO_HOSTS
        "errors": dict(sorted(stats.errors.items())), "hosts": [list(t) for t in stats.hosts.top(INFO_HOSTS)],
    }


def node_summary(node: ClusterNode, cpu_s: float, wall_s: float) -> dict[str, Any]:
    """The node's ``summary.json`` figures: one summary, for a one-node crawl and a cluster node alike.
    ``finished``: the crawl ended (``done``) and nothing is left queued here (a page limit leaves work)."""
    stats = node.parts.stats.as_dict()
    pages = int(stats["pages"])  # type: ignore[call-overload]
    frontier = node.parts.frontier
    return {
        **stats, "node": node.node_id, "end": node.reason, "frontier": frontier.stats(),
        "finished": node.reason == "done" and frontier.is_done(), "seeds": len(node.parts.config.seeds),
        "wall_s": round(wall_s, 3), "cpu_s": round(cpu_s, 3),
        "pages_per_s": round(pages / wall_s, 1) if wall_s > 0 else 0.0,
        "cpu_ms_per_page": round(1000 * cpu_s / pages, 3) if pages else None,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "epoch": node.parts.stats.started_at, "cross": node.router.stats.as_dict(),
        "buckets": dict(node.keeper.counts), "adoptions": node.adoptions,
        "ownership_log": node.keeper.log, "recoveries": node.recoveries,
        "coordinator_events": node.coordinating.events, "backend": node.outage.as_dict(),
        "fence": dict(node.gate.http.counts), "losses": node.losses.as_dict(),
    }
