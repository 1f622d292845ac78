"""The steps of a re-crawl cycle that both cycle runners share: plan, queue, and the summary section.

A cycle runs as one run of the crawl (:func:`webgather.runtime.launch.crawl.run_cycle` on one node,
:func:`webgather.runtime.launch.cluster.start_cycle` in a cluster; each node's part is
:class:`~webgather.runtime.cycle.cluster.NodeCycle`):

1. *plans* (:func:`plan`): the revisit policy (``recrawl.policy``) picks the active pages due
   now (:func:`~webgather.recrawl.policy.plan_revisits`) within the node's share of the cycle's
   budget minus the share kept for never-seen URLs already queued; the plan is committed
   (cycle ``planned``, its URLs marked pending), then queued in the frontier past the seen-test
   (:func:`queue`, :meth:`Frontier.requeue`), then the cycle is ``running``;
2. *runs* the node with :class:`~webgather.recrawl.hooks.RecrawlHooks`, its fetches drawn from
   the cycle's budget (:mod:`webgather.runtime.member.budget`): revisits and never-seen URLs
   (links found on revisited pages, leftovers of earlier cycles) share it;
3. *ends*: when the budget is spent or nothing is left the cycle is ``done``; a cycle stopped by
   a signal or a kill stays ``running`` and the next run continues it (no new plan, the rest of
   its budget), like any resumed crawl. ``summary.json`` gets a ``recrawl`` section
   (:func:`section`: counters, dead pages).

Times are wall-clock seconds from the injected clock (the same clock stamps
the fetches), so a test or benchmark can move a whole web through hours of
simulated time without sleeping.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from webgather.config import RecrawlConfig
from webgather.frontier.model import CrawlItem
from webgather.recrawl.policy import expected_freshness_now, plan_revisits
from webgather.recrawl.state import CycleRow, UrlState
from webgather.runtime.engine.parts import NodeParts

__all__ = ["MAX_DEAD_LISTED", "plan", "queue", "section"]

MAX_DEAD_LISTED = 10_000
"""Dead URLs listed by name in a summary (the count is always exact)."""


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
