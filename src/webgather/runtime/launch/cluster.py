"""Starting a cluster crawl, joining one, and running one node of it: what the commands call.

* :func:`start_crawl` stores the crawl's definition (config, seeds, epoch; see
  :mod:`webgather.cluster.definition`), registers its identity settings,
  optionally creates the version-0 table over the nodes about to start (so a
  ``--workers N`` crawl begins with no hand-off at all), sends the seeds to
  their buckets' streams and counts a run (``runs``: the crawl is over when the
  coordinating node raises ``done`` to it).
* :func:`join_crawl` reads the definition a joining node runs with (plus its
  local settings: :mod:`webgather.runtime.launch.start`); a node naming another M is
  refused.
* :func:`run_cluster_node` runs one node under ``DIR/nodes/<node>/`` (its
  own WARC files, crawl log, state and summary), holding the node's lock; in a
  re-crawl cycle (counter ``recrawl.cycle`` > 0) as that cycle's node
  (:mod:`webgather.runtime.cycle.cluster`); with a shared store, beside its
  checkpoint loop (:mod:`webgather.runtime.durability.checkpoint`), and it ships its last
  WARC files there once its archive is closed.
* :func:`start_cycle` starts a re-crawl cycle (its settings stored, then a run),
  or resumes the unfinished one; :func:`current_cycle` is the latest one.

Seeds are routed like links: a batch per bucket, read by whoever owns the
bucket. Every start sends them again; the owner's seen-test drops repeats.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from webgather.cluster import definition as definitions
from webgather.cluster._common import check_node
from webgather.cluster.definition import CrawlDefinition, CycleSpec, publish_cycle, read_cycle
from webgather.cluster.mapping import bucket_of, initial
from webgather.cluster.patience import within_outage
from webgather.cluster.router import send_retrying
from webgather.cluster.transport import Backend
from webgather.cluster.wire import encode_batch
from webgather.config import CrawlConfig
from webgather.config.local import local_of
from webgather.errors import CannotContinue, ClusterError, IncompatibleCrawl, StoreError, WriteFailed
from webgather.fetch.resolver import Resolver
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.recrawl.policy import check_config
from webgather.clock import Clock, SystemClock
from webgather.runtime.durability.checkpoint import Checkpointer
from webgather.runtime.partition.addresses import SharedAddresses, learn_retrying
from webgather.runtime.cycle.cluster import NodeCycle, cycle_config
from webgather.runtime.partition.frontier import keyed_frontier
from webgather.runtime.member.node import ClusterNode
from webgather.runtime.durability.recovery import NodeLock
from webgather.runtime.metrics.node import serve_node_metrics
from webgather.runtime.engine.page_hooks import HookFunctions
from webgather.runtime.engine.parts import NodeParts, open_parts
from webgather.runtime.metrics.progress import Progress
from webgather.runtime.engine.signals import NodeSignals
from webgather.runtime.engine.pipeline import seed_items
from webgather.scope import Scope
from webgather.store.shared import SharedStore, claim_store, claimed_epoch, open_store
from webgather.store.summary import record_run
from webgather.urls import host_key

__all__ = ["CYCLE", "absent_crawl", "current_cycle", "join_crawl", "partition_of", "run_cluster_node", "ship_last",
           "start_crawl", "start_cycle", "submit_seeds"]

SEED_SENDER = "seeds"
CYCLE = "recrawl.cycle"
"""Coordinator counter: the number of the crawl's latest re-crawl cycle (0: none yet)."""


def partition_of(config: CrawlConfig, backend: Backend, node: str | None = None,
                 resolver: Resolver | None = None) -> tuple[SharedAddresses | None, type[Frontier]]:
    """The shared addresses (None: the partition key is the host key) and the frontier class
    that follows the partition.

    With ``partition_by = "ip"`` a host's key is the first address any node published for
    it (:mod:`webgather.runtime.partition.addresses`); ``resolver`` resolves new hosts (a node's
    is given once its parts are open: :meth:`~SharedAddresses.use_resolver`); the caller calls :meth:`~SharedAddresses.refresh` before opening a frontier from disk. With
    ``"gnp"`` it is the bucket of the first placement published (:mod:`webgather.runtime.partition.gnp`;
    ``node``: the node that places and measures, None for seeds)."""
    if config.cluster.partition_by == "host":
        return None, Frontier
    if config.cluster.partition_by == "gnp":  # imported here: numpy and redis-py, which other crawls need not load
        import scipy.optimize  # noqa: F401  (GNP's fits need it: loaded now, not on the event loop mid-crawl)

        from webgather.cluster.positions import positions_of
        from webgather.runtime.partition.gnp import GnpPlacements

        placements = GnpPlacements(positions_of(backend), backend.coordinator(), config, SystemClock(), node=node,
                                   resolver=resolver)
        return placements, keyed_frontier(placements.frontier_key)
    addresses = SharedAddresses(backend.coordinator(), resolver)
    return addresses, keyed_frontier(addresses.frontier_key)


async def submit_seeds(backend: Backend, config: CrawlConfig, seeds: Sequence[str]) -> int:
    """Send the in-scope seeds to their buckets' streams; returns how many were sent."""
    items = seed_items(seeds, Scope(config.scope, seeds), config.frontier.order == "opic")
    partitioned = config.cluster.partition_by != "host"
    addresses, _ = partition_of(config, backend,
                                resolver=Resolver.from_config(config.fetch, SystemClock()) if partitioned else None)
    if addresses is not None:
        await learn_retrying(addresses, [host_key(item.url) for item in items])
    by_bucket: dict[int, list[CrawlItem]] = defaultdict(list)
    for item in items:
        host = host_key(item.url)
        by_bucket[bucket_of(addresses.frontier_key(host) if addresses else host,
                            config.cluster.n_buckets)].append(item)
    transport = backend.transport(SEED_SENDER)
    for seq, (bucket, group) in enumerate(sorted(by_bucket.items()), 1):
        await send_retrying(transport, bucket, encode_batch(SEED_SENDER, seq, group))
    return len(items)


async def start_crawl(backend: Backend, config: CrawlConfig, seeds: Sequence[str], *,
                      nodes: Sequence[str] = (), epoch: float | None = None,
                      has_state: bool = False) -> CrawlDefinition:
    """Define (or resume) the crawl, create the initial table over ``nodes``, send seeds, count a run.
    ``has_state``: the starting node's output holds the crawl's state, so a backend without the crawl lost
    its data (CannotContinue), rather than a crawl to define afresh (it would start again from its seeds)."""
    if has_state and await definitions.read(backend) is None:
        raise _lost_with_state()
    wanted = CrawlDefinition.of(config, seeds, epoch if epoch is not None else SystemClock().wall())
    stored = await definitions.publish(backend, wanted)
    coordinator = backend.coordinator()
    await coordinator.register_crawl(definitions.identity(stored), defined=True)
    if nodes and await coordinator.get_table() is None:
        await coordinator.cas_table(None, initial(nodes, stored.n_buckets))
    await submit_seeds(backend, stored.crawl_config(), [*stored.seeds, *seeds])
    await coordinator.incr("runs")
    return stored


async def current_cycle(backend: Backend) -> CycleSpec | None:
    """The crawl's latest cycle (the one a node starting now takes part in), if any."""
    number = (await backend.coordinator().counters()).get(CYCLE, 0)
    return await read_cycle(backend, number) if number else None


async def start_cycle(backend: Backend, config: CrawlConfig, seeds: Sequence[str], *, nodes: Sequence[str] = (),
                      continuous: bool = False, wall: float) -> tuple[CycleSpec, CrawlDefinition]:
    """Start the next cycle with ``config.recrawl`` (or resume the unfinished one), then a run of the crawl."""
    check_config(config.recrawl)
    coordinator = backend.coordinator()
    counters = await coordinator.counters()
    number = counters.get(CYCLE, 0)
    spec = await read_cycle(backend, number) if number else None
    if spec is None or counters.get("done", 0) >= counters.get("runs", 0):
        spec = CycleSpec(number + 1, wall, dataclasses.asdict(config.recrawl), continuous)
        await publish_cycle(backend, spec)  # stored before the counter: a node seeing the number finds it
        await coordinator.incr(CYCLE)
    stored = await definitions.read(backend)
    if stored is not None:  # max_pages limits the crawl, not its cycles (cycle_config): keep the crawl's
        config = dataclasses.replace(config, max_pages=stored.config.get("max_pages"))
    found = await start_crawl(backend, config, seeds, nodes=nodes)
    return spec, found



async def join_crawl(backend: Backend, *, n_buckets: int | None = None, has_state: bool = False,
                     store_url: str | None = None) -> CrawlDefinition:
    """The crawl's stored definition, registered for this node (``runtime.launch.start`` adds the node's settings).
    A crawl the backend does not know is data the backend lost (CannotContinue) if this node's output holds
    its state (``has_state``) or the crawl's shared store (``store_url``) was claimed by it: see
    :func:`absent_crawl`. ``store_url`` must be the crawl's (IncompatibleCrawl otherwise)."""
    found = await definitions.read(backend)
    if found is None and has_state:
        raise _lost_with_state()
    if found is None:
        raise await absent_crawl(store_url)
    if n_buckets is not None and n_buckets != found.n_buckets:
        raise IncompatibleCrawl(f"this node has --buckets {n_buckets} but the crawl has {found.n_buckets} buckets")
    ours = found.crawl_config().cluster.shared_store
    if store_url is not None and store_url.rstrip("/") != (ours or "").rstrip("/"):
        raise IncompatibleCrawl(f"this node has --shared-store {store_url} but the crawl's is {ours or 'none'}")
    await backend.coordinator().register_crawl(definitions.identity(found), defined=True)
    return found


def _lost_with_state() -> CannotContinue:
    return CannotContinue("the backend has no data of this crawl, but this node's output holds its state: "
                          "Redis lost the crawl's data (flushed, or restarted without persistence)")


async def absent_crawl(store_url: str | None) -> ClusterError:
    """Why Redis has no crawl of the name, for a node with no state of it. A crawl's first node claims its
    shared store (``crawl.json``), which a FLUSHALL or an empty Redis does not touch: a claimed store
    means Redis lost the crawl's data (CannotContinue); an unclaimed one, a crawl never started (a usage
    error). Without a store nothing tells them apart: CannotContinue, naming both."""
    start = "start it with webgather crawl SEED... --redis URL --crawl NAME"
    if store_url is None:
        return CannotContinue(f"Redis has no crawl of that name: either it was never started ({start}) or Redis "
                              "lost its data (FLUSHALL, or a restart without persistence); the crawl's "
                              "--shared-store tells which")
    store = await asyncio.to_thread(open_store, store_url)
    epoch = await asyncio.to_thread(claimed_epoch, store)
    if epoch is None:
        return ClusterError(f"no crawl of that name has been started (Redis and the shared store {store_url} "
                            f"hold none): {start}")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
    return CannotContinue(f"Redis has no crawl of that name, but its shared store {store_url} holds the files "
                          f"of the crawl started {started}: Redis lost the crawl's data (FLUSHALL, or a restart "
                          "without persistence); the crawl cannot go on from that Redis")


async def run_cluster_node(backend: Backend, config: CrawlConfig, *, node_id: str, nodes_dir: Path,
                           epoch: float, clock: Clock | None = None,
                           on_start: Callable[[ClusterNode], None] | None = None,
                           handle_signals: bool = False, node_dir: Path | None = None,
                           progress: bool = False, hooks: HookFunctions | None = None) -> dict[str, Any]:
    """Run node ``node_id`` under ``nodes_dir/node_id`` (or ``node_dir``: a one-node crawl writes in
    its ``--out`` itself) until the crawl ends or it leaves; its summary. ``hooks``: page hooks as
    functions (else ``config.hooks``'s). A failed write (disk full) ends the node: the summary says
    so (``write_failed``) if it can still be written, and the :class:`WriteFailed` is raised."""
    check_node(node_id)  # the id is a path component: checked before any directory
    signals = NodeSignals() if handle_signals else None
    with signals.installed() if signals is not None else contextlib.nullcontext():
        return await _run_signalled(backend, config, node_id=node_id, nodes_dir=nodes_dir, epoch=epoch, clock=clock,
                                    on_start=on_start, signals=signals, node_dir=node_dir, progress=progress,
                                    hooks=hooks)


async def _run_signalled(backend: Backend, config: CrawlConfig, *, node_id: str, nodes_dir: Path, epoch: float,
                         clock: Clock | None, on_start: Callable[[ClusterNode], None] | None,
                         signals: NodeSignals | None, node_dir: Path | None, progress: bool,
                         hooks: HookFunctions | None) -> dict[str, Any]:
    """:func:`run_cluster_node`'s body, with ``signals`` (None: not handled) already caught."""
    node_dir = node_dir if node_dir is not None else nodes_dir / node_id
    addresses, frontier_cls, spec, config = await within_outage(
        lambda: _prepare(backend, config, node_id), node=node_id, max_outage_s=config.cluster.max_outage_s)
    store = await _claimed_store(config, epoch, node_id)
    with NodeLock(node_dir):
        summary: dict[str, Any] = {}
        try:
            async with open_parts(config, node_dir, node_id=node_id, clock=clock, seeds=config.seeds, hooks=hooks,
                                  n_buckets=config.cluster.n_buckets, frontier_cls=frontier_cls, epoch=epoch) as parts:
                node = _node(parts, backend, nodes_dir, frontier_cls, addresses, spec, store)
                checkpoints = node.checkpoints
                try:
                    async with serve_node_metrics(config.metrics, node):  # config.metrics None: off
                        running = _run_node(node, on_start, signals, checkpoints, progress)
                        summary = await _measured(node, addresses, running)
                finally:
                    if node.cycle is not None:
                        node.cycle.close()
                if node.write_failure is not None:  # raised in here: closing the parts knows it failed
                    raise node.write_failure
        except WriteFailed as exc:  # in the crawl, or flushing its last writes
            if summary:
                _write_failed_summary(node_dir, summary, exc)
            raise
        if checkpoints is not None:  # the archive is closed now: ship its last files
            await ship_last(checkpoints, node_id)
            summary["shared_store"] = dict(checkpoints.counts)
        summary = record_run(node_dir, summary)  # the crawl's totals across its runs
    if node.failure is not None:
        raise node.failure
    return summary


async def _prepare(backend: Backend, config: CrawlConfig, node_id: str) -> tuple[
        SharedAddresses | None, type[Frontier], CycleSpec | None, CrawlConfig]:
    """The node's partition (addresses, frontier class), the cycle it takes part in and its config."""
    addresses, frontier_cls = partition_of(config, backend, node_id)
    if addresses is not None:
        await addresses.refresh()  # the frontier files its hosts under bucket_of(key) as it opens
    spec = await current_cycle(backend)
    return addresses, frontier_cls, spec, cycle_config(config, spec) if spec is not None else config


def _node(parts: NodeParts, backend: Backend, nodes_dir: Path, frontier_cls: type[Frontier],
          addresses: SharedAddresses | None, spec: CycleSpec | None, store: SharedStore | None) -> ClusterNode:
    if addresses is not None:
        addresses.use_resolver(parts.resolver)
        addresses.pin_all()
    cycle = NodeCycle.open(spec, parts) if spec is not None else None
    return ClusterNode(parts, backend, nodes_dir=nodes_dir, frontier_cls=frontier_cls, addresses=addresses,
                       cycle=cycle, store=store)


def _write_failed_summary(node_dir: Path, summary: dict[str, Any], exc: WriteFailed) -> None:
    """The summary of a node a failed write stopped, if the disk still takes it."""
    summary.update(finished=False, write_failed=str(exc))
    with contextlib.suppress(StoreError):  # the disk may still be full
        record_run(node_dir, summary)


async def _measured(node: ClusterNode, addresses: SharedAddresses | None,
                    running: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """``running``, with GNP's measuring loop beside it under ``--partition-by gnp``."""
    if node.parts.config.cluster.partition_by == "gnp":
        from webgather.runtime.partition.gnp import GnpPlacements, running_measurer

        parts = node.parts
        assert isinstance(addresses, GnpPlacements)
        addresses.follow(lambda: node.ownership.table)
        return await running_measurer(addresses, parts.config, parts.resolver, parts.clock, running)
    return await running


async def _claimed_store(config: CrawlConfig, epoch: float, node_id: str) -> SharedStore | None:
    """The crawl's shared store, claimed for this crawl (None without ``--shared-store``). A store that
    cannot be reached is waited for as in an outage: up to ``max_outage_s``, then CannotContinue."""
    if not config.cluster.shared_store:
        return None
    store = await asyncio.to_thread(open_store, config.cluster.shared_store)
    await within_outage(lambda: asyncio.to_thread(claim_store, store, epoch), node=node_id,
                        max_outage_s=config.cluster.max_outage_s, what="shared store", retry=(StoreError,))
    return store


async def ship_last(checkpoints: Checkpointer, node_id: str) -> None:
    """Ship the closed archive's last files. A shared store that refuses them (full, read-only, down) stops
    the node as a store outage does (CannotContinue, exit 6): the files stay in the node's directory."""
    try:
        await asyncio.to_thread(checkpoints.ship_all)
    except WriteFailed:
        raise
    except StoreError as exc:
        raise CannotContinue(f"node {node_id}: the shared store cannot take this node's last files ({exc}); "
                             "they stay in its directory") from None


async def _run_node(node: ClusterNode, on_start: Callable[[ClusterNode], None] | None,
                    signals: NodeSignals | None, checkpoints: Checkpointer | None, progress: bool) -> dict[str, Any]:
    loop, parts = asyncio.get_running_loop(), node.parts
    looping = loop.create_task(checkpoints.run()) if checkpoints is not None else None
    shown = loop.create_task(Progress(parts.stats, parts.frontier.stats, parts.clock.monotonic, enabled=progress).run())
    try:
        if on_start is not None:
            on_start(node)
        try:
            if signals is not None:
                signals.attach(node.leave, node.stop)
            summary = await node.run()
        finally:
            if signals is not None:
                signals.detach()
            shown.cancel()
        if checkpoints is not None and summary["end"] == "left":
            await checkpoints.left()
        if node.cycle is not None:
            summary["recrawl"] = node.cycle.finish(summary["end"] == "done")
        if parts.page_hooks is not None:
            summary["hooks"] = parts.page_hooks.summary()
        summary["node_settings"] = local_of(parts.config)  # what this node ran with (config.local)
        summary["run_errors"] = dict(summary.get("errors") or {})  # this run's alone: the summary sums runs
        return summary
    finally:
        if looping is not None and checkpoints is not None:  # before the rows close: a checkpoint reads them
            looping.cancel()
            await asyncio.gather(looping, return_exceptions=True)
            checkpoints.close()
        node.rows.close()
