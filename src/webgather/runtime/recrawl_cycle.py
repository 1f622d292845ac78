"""One re-crawl cycle of a node, and the continuous loop of cycles: the IO shell.

A cycle (:func:`run_cycle`) opens the node's parts on ``config.out_dir`` (the
frontier and archive of the crawl being kept fresh) and its
:class:`~webgather.recrawl.state.UrlState` (started from the crawl log and the archive when
the crawl was made without re-crawl state: :mod:`webgather.recrawl.bootstrap`), then:

1. *plans*: the revisit policy (``recrawl.policy``) picks the active pages due
   now (:func:`~.policy.plan_revisits`) within the cycle's budget minus the
   share kept for never-seen URLs already queued; the plan is committed
   (cycle ``planned``, its URLs marked pending), then queued in the frontier
   past the seen-test (:meth:`Frontier.requeue`), then the cycle is ``running``;
2. *runs* the node with :class:`~.hooks.RecrawlHooks` and
   a page permit of what is left of the budget: revisits and never-seen URLs
   (links found on revisited pages, leftovers of earlier cycles) share it;
3. *ends*: when the budget is spent or the frontier is empty the cycle is
   ``done``; a cycle stopped by a signal or a kill stays ``running`` and the
   next run continues it (no new plan, the rest of its budget), like any
   resumed crawl. ``summary.json`` gets the crawl totals plus a ``recrawl``
   section (counters, dead pages).

Times are wall-clock seconds from the injected clock (the same clock stamps
the fetches), so a test or benchmark can move a whole web through hours of
simulated time without sleeping.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from webgather.config import CrawlConfig, RecrawlConfig
from webgather.frontier.model import CrawlItem
from webgather.recrawl.bootstrap import import_crawl
from webgather.recrawl.hooks import RecrawlHooks, RobotsReuse
from webgather.recrawl.policy import check_config, expected_freshness_now, plan_revisits
from webgather.recrawl.state import CycleRow, UrlState, state_path
from webgather.clock import Clock, SystemClock
from webgather.runtime.node import CrawlNode
from webgather.runtime.parts import NodeParts, open_parts
from webgather.runtime.signals import crawl_signals
from webgather.store.outdir import merge_seeds
from webgather.store.summary import write_summary

__all__ = ["MAX_DEAD_LISTED", "plan", "queue", "run_continuous", "run_cycle", "section"]

MAX_DEAD_LISTED = 10_000
"""Dead URLs listed by name in a summary (the count is always exact)."""


async def run_cycle(
    config: CrawlConfig, seeds: Sequence[str] = (), *, node_id: str = "n0", clock: Clock | None = None
) -> dict[str, Any]:
    """Run (or continue) one re-crawl cycle of the crawl in ``config.out_dir``; return its summary."""
    check_config(config.recrawl)
    out_dir = Path(config.out_dir)
    all_seeds = merge_seeds(out_dir, seeds)
    clock = clock or SystemClock()
    wall0 = clock.monotonic()
    state = UrlState.open(state_path(out_dir))
    try:
        imported = import_crawl(state, out_dir)
        async with open_parts(config, out_dir, node_id=node_id, clock=clock, seeds=all_seeds) as parts:
            cycle = _begin(state, parts, config.recrawl)
            done = await _run_node(state, parts, config, cycle, all_seeds)
            if done:
                if parts.frontier.is_done():
                    state.clear_pending()
                state.set_cycle_status(cycle.id, "done", clock.wall())
            summary = _summary(state, parts, cycle, done, clock.monotonic() - wall0)
            summary["seeds"] = len(all_seeds)
            summary["recrawl"]["imported"] = imported
    finally:
        state.close()
    write_summary(out_dir, summary)
    return summary


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


def _begin(state: UrlState, parts: NodeParts, cfg: RecrawlConfig) -> CycleRow:
    """The cycle to run: the unfinished one, or a new one planned and queued now."""
    last = state.last_cycle()
    if last is not None and last.status == "running":
        return last
    if last is not None and last.status == "planned":
        if parts.frontier.pending() < last.queued_before + last.planned:  # killed before the queueing
            queue(parts, state.pending_records(last.id))
        state.set_cycle_status(last.id, "running")
        return last
    if parts.frontier.pending() == 0:
        state.clear_pending()  # marks left by revisits that never ran (dropped hosts, internal errors)
    cycle = plan(state, parts, cfg, 1 if last is None else last.id + 1, budget=cfg.budget_per_cycle)
    queue(parts, state.pending_records(cycle.id))
    state.set_cycle_status(cycle.id, "running")
    return dataclasses.replace(cycle, status="running")


def plan(state: UrlState, parts: NodeParts, cfg: RecrawlConfig, cycle_id: int, *, budget: int | None,
         buckets: Collection[int] | None = None) -> CycleRow:
    """Pick and commit (status ``planned``) cycle ``cycle_id``'s revisits: at most ``budget`` fetches
    minus the share kept for never-seen URLs; only URLs of ``buckets`` if given (a cluster node's own)."""
    now = parts.clock.wall()
    queued = parts.frontier.pending()
    queued_new = max(0, queued - state.totals()["pending"])
    arrays = state.plan_arrays(buckets)
    if budget is None:
        limit = arrays.fp.size
    else:
        limit = budget - min(queued_new, math.ceil(cfg.new_url_share * budget))
    chosen = plan_revisits(
        arrays.last_fetch_s, arrays.rate_per_s, arrays.n_obs, policy=cfg.policy, now=now, cycle_s=cfg.cycle_s,
        limit=limit, max_interval_s=cfg.max_interval_s, prior_weight=cfg.prior_weight,
        death_rate=1.0 / cfg.page_life_s, first_age_s=arrays.first_age_s,
    )
    fps = [int(fp) for fp in arrays.fp[chosen]]
    row = CycleRow(cycle_id, "planned", now, None, cfg.policy, budget, len(fps), queued)
    state.plan_cycle(row, fps)
    return row


def queue(parts: NodeParts, records: Sequence[Any]) -> None:
    """Queue planned revisits in the frontier, past its seen-test."""
    items = [CrawlItem(r.url, r.fp, depth=r.depth, priority=float(r.depth), kind=r.kind) for r in records]
    parts.frontier.requeue(items, parts.clock.monotonic())


async def _run_node(
    state: UrlState, parts: NodeParts, config: CrawlConfig, cycle: CycleRow, seeds: Sequence[str]
) -> bool:
    """Run the node for the rest of the cycle's budget; True when the cycle is complete."""
    left: int | None = None
    if cycle.budget is not None:
        left = cycle.budget - state.cycle_counts(cycle.id).get("fetches", 0)
        if left <= 0:
            return True
    robots = RobotsReuse(config.robots.ttl_s, config.fetch.user_agent, config.robots.max_bytes, parts.clock.wall)
    node = CrawlNode(parts, hooks=RecrawlHooks(state, parts.writer.writer, config.recrawl, cycle.id, robots),
                     page_permit=None if left is None else (lambda used: used < left))
    node.add_seeds(seeds)
    with crawl_signals(node.stop, node.stop):
        await node.run()
    return parts.frontier.is_done() or (left is not None and parts.stats.pages >= left)


def _summary(state: UrlState, parts: NodeParts, cycle: CycleRow, done: bool, wall_s: float) -> dict[str, Any]:
    stats = parts.stats.as_dict()
    return {
        **stats, "frontier": parts.frontier.stats(), "wall_s": round(wall_s, 3), "node": parts.node_id,
        "finished": parts.frontier.is_done(), "recrawl": section(state, cycle, done, parts.clock.wall()),
    }


def section(state: UrlState, cycle: CycleRow, done: bool, now: float) -> dict[str, Any]:
    """The ``recrawl`` section of a summary: the cycle's counters, totals, dead pages, freshness."""
    dead = state.dead_urls()
    last_s, rates = state.active_arrays()
    return {
        "cycle": cycle.id, "policy": cycle.policy, "budget": cycle.budget, "planned_revisits": cycle.planned,
        "cycle_done": done, "counts": state.cycle_counts(cycle.id), "totals": state.totals(),
        "estimated_freshness": round(expected_freshness_now(last_s, rates, now), 4),
        "dead_this_cycle": [list(d) for d in state.dead_urls(cycle.id)][:MAX_DEAD_LISTED],
        "dead": [list(d) for d in dead[:MAX_DEAD_LISTED]],
    }
