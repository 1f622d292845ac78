"""Run a crawl, or a re-crawl cycle, on this machine: what ``webgather crawl`` and ``recrawl DIR`` call.

The one run path: each is one cluster node
(:func:`~webgather.runtime.launch.cluster.run_cluster_node`) on the in-process
backend, owning every bucket and writing in ``config.out_dir`` itself; over
Redis the same node runs beside others. What a cluster keeps in Redis across
runs, a one-node crawl keeps on disk, and each run restores it into its fresh
in-process backend: the pages counted against ``max_pages`` (``summary.json``),
the number of the last re-crawl cycle, whether it finished, and the fetches it
spent of its budget (the re-crawl state, :class:`~webgather.recrawl.state.UrlState`).

Seeds are kept in ``DIR/seeds.txt`` so a resumed crawl (same ``--out``) knows
its seed hosts (the scope) even when the command names no seeds again.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from webgather.clock import Clock, SystemClock
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.definition import CycleSpec, publish_cycle
from webgather.cluster.definition import save as save_definition
from webgather.config import CrawlConfig, RecrawlConfig
from webgather.config.local import local_of
from webgather.recrawl.policy import check_config
from webgather.recrawl.state import UrlState, state_path
from webgather.runtime.member.budget import budget_key
from webgather.errors import StoreError
from webgather.runtime.launch.cluster import CYCLE, start_crawl, start_cycle
from webgather.runtime.launch.start import SOLO_MEMBER_TTL_S, launch_node
from webgather.runtime.member.permits import COUNTER as PERMITS
from webgather.runtime.engine.page_hooks import HookFunctions
from webgather.store.outdir import merge_seeds
from webgather.store.summary import read_summary

__all__ = ["SOLO_MEMBER_TTL_S", "run_continuous", "run_crawl", "run_cycle"]


async def run_crawl(
    config: CrawlConfig,
    seeds: Sequence[str],
    *,
    node_id: str = "n0",
    clock: Clock | None = None,
    progress: bool = False,
    hooks: HookFunctions | None = None,
) -> dict[str, Any]:
    """Crawl from ``seeds`` into ``config.out_dir`` until done; return the summary.

    The one run path: this is one cluster node (:func:`~webgather.runtime.launch.cluster.run_cluster_node`)
    on the in-process backend, owning every bucket, writing in ``config.out_dir`` itself. A failed
    write (disk full) stops the crawl: the summary says so (``write_failed``, ``finished`` false)
    if it can still be written, and the :class:`WriteFailed` is raised. ``hooks``: page hooks given as
    functions (:mod:`webgather.runtime.engine.page_hooks`), else those of ``config.hooks``."""
    out_dir = Path(config.out_dir)
    all_seeds = merge_seeds(out_dir, seeds)
    clock = clock or SystemClock()
    config = dataclasses.replace(config, seeds=tuple(all_seeds))
    hub = InProcessHub(config.cluster.n_buckets, clock)
    found = await start_crawl(hub, config, all_seeds, nodes=[node_id], epoch=clock.wall())
    save_definition(out_dir, found)  # what recrawl DIR and a resume read (cluster.definition)
    if config.max_pages is not None:  # crawl-wide, as in a cluster: earlier runs' pages hold their permits
        await hub.coordinator().incr(PERMITS, min(config.max_pages, _pages_so_far(out_dir)))
    return await launch_node(hub, found, local_of(config), node_id=node_id, out=out_dir, solo=True, clock=clock,
                             progress=progress, hooks=hooks)


async def run_cycle(
    config: CrawlConfig, seeds: Sequence[str] = (), *, node_id: str = "n0", clock: Clock | None = None
) -> dict[str, Any]:
    """Run (or continue) one re-crawl cycle of the crawl in ``config.out_dir``; return its summary
    (its ``recrawl`` section: :meth:`~webgather.runtime.cycle.cluster.NodeCycle.finish`)."""
    check_config(config.recrawl)
    out_dir = Path(config.out_dir)
    all_seeds = merge_seeds(out_dir, seeds)
    clock = clock or SystemClock()
    config = dataclasses.replace(config, seeds=tuple(all_seeds))
    hub = InProcessHub(config.cluster.n_buckets, clock)
    await _restore_cycle(hub, out_dir, config.recrawl)
    _spec, found = await start_cycle(hub, config, all_seeds, nodes=[node_id], wall=clock.wall())
    save_definition(out_dir, found)
    return await launch_node(hub, found, local_of(config), node_id=node_id, out=out_dir, solo=True, clock=clock)


async def run_continuous(
    config: CrawlConfig,
    seeds: Sequence[str] = (),
    *,
    node_id: str = "n0",
    clock: Clock | None = None,
    max_cycles: int | None = None,
    sleep: Callable[[float], Awaitable[object]] | None = None,
    on_cycle: Callable[[dict[str, Any]], object] | None = None,
) -> int:
    """Run a cycle every ``recrawl.cycle_s`` until ``max_cycles`` or a stopped cycle; returns cycles run.

    ``sleep`` waits between cycles (default ``asyncio.sleep``; a test passes
    one that moves a fake clock instead)."""
    clock = clock or SystemClock()
    pause = sleep or asyncio.sleep
    count = 0
    while max_cycles is None or count < max_cycles:
        start = clock.monotonic()
        summary = await run_cycle(config, seeds if count == 0 else (), node_id=node_id, clock=clock)
        count += 1
        if on_cycle is not None:
            on_cycle(summary)
        if not summary["recrawl"]["cycle_done"] or (max_cycles is not None and count >= max_cycles):
            break
        await pause(max(0.0, start + config.recrawl.cycle_s - clock.monotonic()))
    return count


async def _restore_cycle(hub: InProcessHub, out_dir: Path, recrawl: RecrawlConfig) -> None:
    """What Redis would hold of the crawl's cycles: the last one's number and, if it did not finish
    (a signal or a kill), its spec, an unfinished run, and the fetches it spent of its budget, so
    :func:`~webgather.runtime.launch.cluster.start_cycle` continues it within the rest of its budget."""
    path = state_path(out_dir)
    if not path.exists():
        return
    state = UrlState.open(path)
    try:
        last, spent = state.last_cycle(), 0
        if last is not None and last.status != "done":
            spent = state.cycle_counts(last.id).get("fetches", 0)
    finally:
        state.close()
    if last is None:
        return
    coordinator = hub.coordinator()
    await coordinator.incr(CYCLE, last.id)
    if last.status != "done":
        settings = {**dataclasses.asdict(recrawl), "budget_per_cycle": last.budget}
        await publish_cycle(hub, CycleSpec(last.id, last.started_s, settings))
        await coordinator.incr("runs")
        await coordinator.incr(budget_key(last.id), spent)


def _pages_so_far(out_dir: Path) -> int:
    """Pages of the crawl's earlier runs, as its ``summary.json`` counts them (0 for a new crawl)."""
    try:
        return int(read_summary(out_dir).get("pages") or 0)
    except StoreError:
        return 0
