"""Prometheus metrics of one node (``--metrics ADDR:PORT``): what is read, when, and the server's life.

Zero cost per page: nothing here runs while the node crawls. At each scrape the HTTP
server's thread asks the event loop for a :class:`NodeSample` (:func:`take_sample`, run on the
loop thread, so it never reads a dict the loop is changing) of counters the node keeps
anyway: :class:`~webgather.runtime.engine.stats.CrawlStats` (its fetch latency histogram is a
fixed list of bucket counts, one bisect per fetch), ``frontier.stats()``, the robots gate's
host states and, in a cluster, the router's :class:`~webgather.cluster.router.RouterStats`,
the bucket keeper's counts, the buckets owned and the recoveries; in a re-crawl cycle, the
cycle's counters. :mod:`webgather.runtime.metrics.export` turns a sample into metric
families on the node's own ``CollectorRegistry`` (no global registry: several nodes may
run in one process) and serves them with ``prometheus_client``'s HTTP server, which
:func:`serve_metrics` stops (thread joined, port released) when the run ends.

What a sample reads is a protocol (:class:`NodeView`: :class:`~webgather.runtime.engine.parts.NodeParts`
fits; :class:`ClusterView`: :class:`~webgather.runtime.member.node.ClusterNode` fits;
:class:`RecrawlView`: :class:`~webgather.recrawl.hooks.RecrawlHooks` fits), so a plain crawl
and a cluster node feed it alike.

``--workers N --metrics ADDR:PORT``: worker ``wK`` serves on PORT+K (:func:`worker_metrics`);
each sample carries the node id (``webgather_node_info``). Port 0 lets each node pick a free
port, logged at INFO.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Collection, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from webgather.cluster.router import RouterStats
from webgather.config.listen import listen_address
from webgather.errors import ConfigError
from webgather.runtime.engine.stats import CrawlStats

if TYPE_CHECKING:
    from webgather.runtime.metrics.export import MetricsServer

__all__ = [
    "ClusterSample", "ClusterView", "NodeSample", "NodeView", "RecrawlView", "ServedNode", "serve_metrics",
    "serve_node_metrics", "take_sample", "worker_metrics",
]

_log = logging.getLogger(__name__)

NODE_COUNTERS = ("pages", "requisites", "attempts", "retries", "robots_fetches", "bytes_received", "links_found",
                 "urls_new")
"""The :class:`CrawlStats` counters a sample copies."""


class _Frontier(Protocol):
    def stats(self) -> Mapping[str, int | float]: ...

    @property
    def parked(self) -> Sized: ...


class _Robots(Protocol):
    def counts(self, now: float) -> Mapping[str, int]: ...


class _Clock(Protocol):
    def monotonic(self) -> float: ...


class NodeView(Protocol):
    """What every node's sample reads (:class:`~webgather.runtime.engine.parts.NodeParts` has it)."""

    @property
    def node_id(self) -> str: ...

    @property
    def stats(self) -> CrawlStats: ...

    @property
    def frontier(self) -> _Frontier: ...

    @property
    def robots(self) -> _Robots: ...

    @property
    def clock(self) -> _Clock: ...


class _Router(Protocol):
    @property
    def stats(self) -> RouterStats: ...


class _Keeper(Protocol):
    @property
    def counts(self) -> Mapping[str, int]: ...


class _Ownership(Protocol):
    @property
    def ready(self) -> Collection[int]: ...


class ClusterView(Protocol):
    """What a cluster node's sample reads besides :class:`NodeView` (a ClusterNode has it)."""

    @property
    def router(self) -> _Router: ...

    @property
    def keeper(self) -> _Keeper: ...

    @property
    def ownership(self) -> _Ownership: ...

    @property
    def recoveries(self) -> Sequence[Mapping[str, Any]]: ...


class _CycleCounts(Protocol):
    def cycle_counts(self, cycle: int) -> dict[str, int]: ...


class RecrawlView(Protocol):
    """A re-crawl cycle's counters (:class:`~webgather.recrawl.hooks.RecrawlHooks` has them)."""

    @property
    def state(self) -> _CycleCounts: ...

    @property
    def cycle(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ClusterSample:
    buckets_owned: int
    cross: Mapping[str, int]
    """:meth:`RouterStats.as_dict`."""
    buckets: Mapping[str, int]
    """The bucket keeper's counts (hand-offs, deliveries, batches...)."""
    recoveries: Mapping[str, int]
    """Recoveries of dead nodes run here, by outcome: recovered, skipped, unrecoverable."""
    recovered_buckets: int


@dataclass(frozen=True, slots=True)
class NodeSample:
    """One node's figures at one instant: plain values, read on the loop thread."""

    node: str
    counters: Mapping[str, int]
    """:data:`NODE_COUNTERS` by name."""
    status: Mapping[int, int]
    errors: Mapping[str, int]
    fetch_seconds_counts: tuple[int, ...]
    fetch_seconds_sum: float
    frontier: Mapping[str, int | float]
    parked: int
    robots: Mapping[str, int]
    cluster: ClusterSample | None = None
    recrawl_cycle: int | None = None
    recrawl: Mapping[str, int] = field(default_factory=dict)


def take_sample(node: NodeView, cluster: ClusterView | None = None, recrawl: RecrawlView | None = None) -> NodeSample:
    """Copy the node's counters now (on the event loop's thread: see the module docstring)."""
    stats, frontier = node.stats, node.frontier
    return NodeSample(
        node=node.node_id, counters={name: int(getattr(stats, name)) for name in NODE_COUNTERS},
        status=dict(stats.status), errors=dict(stats.errors),
        fetch_seconds_counts=tuple(stats.fetch_seconds_counts), fetch_seconds_sum=stats.fetch_seconds_sum,
        frontier=dict(frontier.stats()), parked=len(frontier.parked),
        robots=dict(node.robots.counts(node.clock.monotonic())),
        cluster=_cluster_sample(cluster) if cluster is not None else None,
        recrawl_cycle=recrawl.cycle if recrawl is not None else None,
        recrawl=recrawl.state.cycle_counts(recrawl.cycle) if recrawl is not None else {},
    )


def _cluster_sample(cluster: ClusterView) -> ClusterSample:
    outcomes = {"recovered": 0, "skipped": 0, "unrecoverable": 0}
    recovered_buckets = 0
    for outcome in cluster.recoveries:
        kind = "skipped" if "skipped" in outcome else "unrecoverable" if "unrecoverable_buckets" in outcome \
            else "recovered"
        outcomes[kind] += 1
        recovered_buckets += int(outcome.get("buckets", 0))
    return ClusterSample(len(cluster.ownership.ready), cluster.router.stats.as_dict(), dict(cluster.keeper.counts),
                         outcomes, recovered_buckets)


def worker_metrics(listen: str | None, worker: int) -> str | None:
    """Worker ``worker``'s ``--metrics``: the same host, port + worker (port 0 stays 0: each picks one)."""
    if listen is None:
        return None
    host, port = _address(listen)
    if port and port + worker > 65535:
        raise ConfigError(f"metrics {listen}: worker w{worker} would need port {port + worker}, above 65535")
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port + worker if port else 0}"


def _address(listen: str) -> tuple[str, int]:
    address = listen_address(listen)
    if address is None:  # config.checks refuses it when loaded; this is for direct callers
        raise ConfigError(f"metrics must be PORT or ADDR:PORT with an IP address, not {listen!r}")
    return address


class _Cycle(Protocol):
    @property
    def hooks(self) -> RecrawlView: ...


class ServedNode(ClusterView, Protocol):
    """A cluster node with its parts and its re-crawl cycle, if any (a ClusterNode)."""

    @property
    def parts(self) -> NodeView: ...

    @property
    def cycle(self) -> _Cycle | None: ...


def serve_node_metrics(listen: str | None, node: ServedNode) -> contextlib.AbstractAsyncContextManager[
        MetricsServer | None]:
    """:func:`serve_metrics` of a cluster node (one-node crawls included): its parts, its cluster
    figures and its cycle's counters."""
    return serve_metrics(listen, node.parts, node, node.cycle.hooks if node.cycle is not None else None)


@contextlib.asynccontextmanager
async def serve_metrics(listen: str | None, node: NodeView, cluster: ClusterView | None = None,
                        recrawl: RecrawlView | None = None) -> AsyncIterator[MetricsServer | None]:
    """Serve the node's metrics on ``listen`` (None: do nothing) while the block runs; stop the
    server (its thread joined, its port released) however the block ends."""
    if listen is None:
        yield None
        return
    from webgather.runtime.metrics.export import MetricsServer  # prometheus_client only when asked for

    server = MetricsServer.start(_address(listen), lambda: take_sample(node, cluster, recrawl))
    _log.info("node %s: metrics on http://%s/metrics", node.node_id, server.url_host)
    try:
        yield server
    finally:
        await server.stop()
