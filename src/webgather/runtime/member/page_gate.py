"""A cluster node's page gate: may this request go now, and may one more page start?

Two questions, asked at two places of the crawl (:class:`~webgather.runtime.engine.node.CrawlNode`):

* **May this request go?** Right before every request, pages and robots.txt alike, the
  node's HTTP client (:attr:`PageGate.parts`' ``http``, a
  :class:`~webgather.runtime.member.fence.FencedHttp`) waits while the membership lease
  may have lapsed (:class:`~webgather.runtime.member.fence.Lease`; on Redis also the
  lease in the server's time, :class:`~webgather.runtime.member.fence.ServerCheck`),
  and refuses a host whose bucket the node does not own and serve now
  (``Ownership.is_ready``). The node's beat keeps the lease current:
  :meth:`PageGate.renewed` after each heartbeat that succeeded, :meth:`PageGate.table_read`
  after each table read sent after it (the rules and why: :mod:`webgather.runtime.member.fence`).
* **May one more page start?** The dispatcher asks :meth:`PageGate.permit` before it
  takes an item. In a re-crawl cycle the answer is the node's grant of the cycle's
  crawl-wide budget (:mod:`webgather.runtime.member.budget`); otherwise, with
  ``max_pages``, the crawl-wide page permits (:mod:`webgather.runtime.member.permits`;
  a cycle is not limited by the crawl's ``max_pages``, whose permits the crawl spent).
  Without either, the gate does not limit pages (:attr:`PageGate.limited` is False).

"Used", the unit both limits count in: pages fetched since this node started plus
fetches running (a fetch that ends without a page frees what it held).

For the crawl's end, :meth:`PageGate.idle` says whether the crawl, as far as the gate
is concerned, has nothing more it could do; :meth:`PageGate.beat` (every heartbeat,
before the node says whether it is idle) gives unused permits back or asks again, and
ticks the budget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from webgather.cluster.handoff import Ownership
from webgather.cluster.transport import Coordinator
from webgather.errors import BackendUnavailable
from webgather.runtime.cycle.cluster import NodeCycle
from webgather.runtime.engine.parts import NodeParts
from webgather.runtime.member.budget import CycleBudget, chunk_size
from webgather.runtime.member.fence import FencedHttp, Lease, fenced_parts, server_check
from webgather.runtime.member.permits import PagePermits, batch_size

__all__ = ["Dispatcher", "PageGate"]

log = logging.getLogger(__name__)


class Dispatcher(Protocol):
    """What the gate asks of the node's crawl (a ``CrawlNode``) when it is asked about it."""

    def running(self) -> int: ...

    def quiet(self) -> bool: ...

    def idle(self) -> bool: ...


class PageGate:
    """The lease, ownership and page-limit checks of one cluster node (module docstring).

    ``wake`` is called when permits or a budget grant arrive (the dispatcher may be waiting)."""

    def __init__(self, parts: NodeParts, coordinator: Coordinator, ownership: Ownership,
                 cycle: NodeCycle | None, *, wake: Callable[[], None]) -> None:
        cluster = parts.config.cluster
        self.lease = Lease(cluster.member_ttl_s, cluster.lease_margin_s)
        server = server_check(coordinator, parts.node_id, lambda: ownership.version, cluster, parts.clock)
        self.parts: NodeParts
        """The node's parts with the fenced HTTP client: what it crawls with."""
        self.http: FencedHttp
        self.parts, self.http = fenced_parts(parts, self.lease, ownership.is_ready, server)
        self.node_id = parts.node_id
        self._stats, self._frontier, self._clock = parts.stats, parts.frontier, parts.clock
        self._base_pages = parts.stats.pages
        """Pages this node's state held when it started: the limits count from here."""
        self.budget = _cycle_budget(coordinator, cycle, lambda: self._stats.pages, wake, cluster.heartbeat_s)
        limit = None if cycle is not None else parts.config.max_pages
        self.permits = None if limit is None else PagePermits(
            coordinator, limit, batch_size(limit, parts.config.fetch.concurrency), wake)

    @property
    def limited(self) -> bool:
        """Does the gate limit pages at all (a cycle's budget or ``max_pages``)?"""
        return self.budget is not None or self.permits is not None

    # -- may one more page start ---------------------------------------------------------
    def permit(self, used: int) -> bool:
        """The dispatcher's question (``used``: the stats' pages plus fetches running)."""
        if self.budget is not None and used >= self.budget.limit():
            return False
        return self.permits is None or self.permits.allows(used - self._base_pages, self._wanted())

    def used(self, crawl: Dispatcher) -> int:
        """Pages fetched since this node started plus fetches running: what its permits paid for."""
        return self._stats.pages - self._base_pages + crawl.running()

    def idle(self, crawl: Dispatcher) -> bool:
        """Nothing to do, or nothing running and no fetch to be had: in a cycle, its budget settled
        (grant given back, or spent with work queued); with max_pages, no permit to be had.
        (A node has at most one of the two: a cycle runs without the crawl's max_pages.)"""
        if self.budget is not None:
            return crawl.quiet() and self.budget.settled(self._wanted())
        blocked = self.permits is not None and crawl.running() == 0 and self.permits.blocked(self.used(crawl))
        return crawl.idle() or blocked

    def activity(self) -> int:
        """Permits taken and budget operations (part of the node's activity figure)."""
        return (self.permits.taken if self.permits else 0) + (self.budget.operations if self.budget else 0)

    def share(self, nodes: int) -> None:
        """The table names ``nodes`` nodes: a budget chunk is sized by this node's share."""
        if self.budget is not None:
            self.budget.resize(chunk_size(self.budget.budget, nodes))

    async def tick(self, crawl: Dispatcher, force: bool = False) -> None:
        """Ask for more budget when the grant runs low, give back what no work needs (a cycle only)."""
        if self.budget is not None:
            await self.budget.tick(self._wanted(), crawl.quiet(), self._clock.monotonic(), force)

    async def beat(self, crawl: Dispatcher) -> None:
        """Every beat, before the node says whether it is idle ("idle" must reflect permits given back
        or taken, and the budget's last tick: see :mod:`webgather.runtime.member.budget`)."""
        if self.permits is not None:
            await self.permits.beat(self.used(crawl), self._wanted(), crawl.idle())
        await self.tick(crawl, force=True)

    async def give_back(self, crawl: Dispatcher) -> None:
        """At the end: return the permits not used (a backend away keeps them from the others)."""
        if self.permits is None:
            return
        try:
            await self.permits.give_back(self.used(crawl))
        except BackendUnavailable:  # kept from the others: the crawl may end that many pages short
            log.warning(f"webgather node {self.node_id}: backend unavailable, "
                        f"{self.permits.held - self.used(crawl)} unused page permits not given back")

    def _wanted(self) -> bool:
        return self._frontier.pending() > 0

    # -- may this request go -------------------------------------------------------------
    def renewed(self, sent_at: float) -> None:
        """A heartbeat sent at ``sent_at`` (monotonic, taken before sending) succeeded."""
        self.lease.renewed(sent_at)

    def mark(self) -> float:
        """Before a table read is sent: the renewal that read may confirm."""
        return self.lease.mark()

    def table_read(self, mark: float) -> None:
        """The table read sent after :meth:`mark` returned ``mark`` succeeded and was adopted."""
        self.http.table_read(mark)


def _cycle_budget(coordinator: Coordinator, cycle: NodeCycle | None, pages: Callable[[], int],
                  wake: Callable[[], None], retry_s: float) -> CycleBudget | None:
    budget = cycle.parts.config.recrawl.budget_per_cycle if cycle is not None else None
    if cycle is None or budget is None:
        return None
    return CycleBudget(coordinator, cycle.spec.cycle, budget, chunk_size(budget, 1), used=pages,
                       on_grant=wake, retry_s=retry_s)
