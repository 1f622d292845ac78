"""A cluster cycle's fetch budget, counted crawl-wide in the coordinator and granted in chunks.

Why a crawl-wide counter rather than fixed per-node quotas: buckets move
during a cycle (a node joins, leaves or dies) and their planned revisits move
with them, so the node that fetches a page is not always the one that planned
it; a node that joins mid-cycle plans nothing yet must be able to fetch what
it was handed. Each node's *plan* is still sized by its share of the budget
(buckets owned, :func:`~webgather.recrawl.policy.apportion`), but the fetches
are drawn from one counter, ``recrawl.<cycle>.granted``, so the cycle's total
never exceeds the budget however the work moves.

A node takes ``chunk`` fetches at a time (``incr``; what it asked beyond the
budget it puts back at once) so the counter costs one round trip per chunk,
not per page; the dispatcher waits when the node's grant is used up
(``CrawlNode(page_limit=...)``). A node with grant left and nothing queued
gives it back, so another node with queued work can use it. Every operation
is an ``incr``, so the counter always equals the fetches granted and not
returned, whatever the interleaving.

Idle, for the crawl's end: a node with queued work and no grant counts as
idle only when its last request found the budget spent; requests are repeated
at every heartbeat, and give-backs raise the node's activity counter, so two
termination waves cannot both pass while given-back budget waits for a node
that could use it. A kill loses at most the unused part of one chunk.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from webgather.cluster.transport import Coordinator

__all__ = ["CycleBudget", "budget_key", "chunk_size"]

MAX_CHUNK = 64


def budget_key(cycle: int) -> str:
    return f"recrawl.{cycle}.granted"


def chunk_size(budget: int, nodes: int) -> int:
    """Fetches asked at a time: small against the budget (an eighth of a node's share), at most 64."""
    return max(1, min(MAX_CHUNK, budget // (8 * max(1, nodes))))


class CycleBudget:
    """This node's grant of a cycle's crawl-wide budget (module docstring)."""

    def __init__(self, coordinator: Coordinator, cycle: int, budget: int, chunk: int, *,
                 used: Callable[[], int], on_grant: Callable[[], None], retry_s: float) -> None:
        self.coordinator = coordinator
        self.key = budget_key(cycle)
        self.budget = budget
        self.chunk = chunk
        self.used = used
        """Fetches made (and under way) on this grant: the node's final page fetches."""
        self.on_grant = on_grant
        self.retry_s = retry_s
        self.granted = 0
        self.dry = False
        """The last request found the budget spent."""
        self.operations = 0
        self._last_try = -math.inf

    def limit(self) -> int:
        return self.granted

    def resize(self, chunk: int) -> None:
        """Ask ``chunk`` fetches at a time from now on (sized by the number of nodes in the table)."""
        self.chunk = chunk

    def left(self) -> int:
        return self.granted - self.used()

    def settled(self, has_work: bool) -> bool:
        """Nothing more to do with this budget: no work and no grant held, or work and no budget left."""
        return self.left() <= 0 and (self.dry or not has_work)

    async def tick(self, has_work: bool, quiet: bool, now: float, force: bool = False) -> None:
        """Ask for a chunk when the grant runs low and work is queued; give back what no work needs."""
        left = self.left()
        if has_work and left < max(1, self.chunk // 2):
            if self.dry and not force and now - self._last_try < self.retry_s:
                return
            self._last_try = now
            await self._ask()
        elif not has_work and quiet and left > 0:
            await self.coordinator.incr(self.key, -left)
            self.granted -= left
            self.operations += 1

    async def _ask(self) -> None:
        total = await self.coordinator.incr(self.key, self.chunk)
        got = max(0, min(self.chunk, self.budget - (total - self.chunk)))
        if got < self.chunk:
            await self.coordinator.incr(self.key, got - self.chunk)  # put back what was asked beyond the budget
        self.dry = got == 0
        if got:  # a dry ask changes nothing: counted as activity it held a dry node's cycle open for ever
            self.operations += 1
            self.granted += got
            self.on_grant()
