"""A crawl-wide ``--max-pages`` for a cluster: nodes take page permits from one shared counter.

The counter ``page_permits`` in the backend counts permits held by nodes plus
pages they fetched with them; :meth:`~webgather.cluster.transport.Counters.take_permits`
never raises it past ``max_pages``. A node takes permits in batches (not a
round trip per page) and may start a fetch only while

    pages fetched here since start + fetches running  <  permits it holds,

so every permit pays for at most one final page: a fetch that ends without a
page (a retry, a robots-disallowed URL) frees its permit for the next one. A
node with nothing left to do gives its unused permits back (``incr(-k)``), so
another node with work can take them; a node that wants a permit and gets none
is *blocked*: it counts as idle for the end of the crawl, and asks again on
every beat (someone may have given some back).

Exactness: the crawl ends only when every node is idle or blocked (and has
given back what it did not use), so the counter then equals the pages fetched:
``max_pages`` exactly if the crawl has that many URLs. A node that is killed
keeps the permits it held (at most one batch) from the others: the crawl may
then end up to that many pages short. Pages it fetched twice after recovery
take permits again (they are fetches). The counter persists with the crawl: a
resumed crawl continues the count.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from webgather.cluster.transport import Counters
from webgather.errors import BackendUnavailable

__all__ = ["COUNTER", "PagePermits", "batch_size"]

COUNTER = "page_permits"
BATCH_SHARE = 64
"""A batch is at most 1/64 of the limit, so a few nodes share a small limit fairly."""


def batch_size(max_pages: int, concurrency: int) -> int:
    """Permits taken per round trip: more than a node can run at once is pointless."""
    return max(1, min(concurrency, max_pages // BATCH_SHARE))


class PagePermits:
    """One node's permits (module docstring). ``used``: pages fetched here since start plus
    fetches running."""

    def __init__(self, counters: Counters, max_pages: int, batch: int, wake: Callable[[], None]) -> None:
        self.counters = counters
        self.max_pages = max_pages
        self.batch = batch
        self.wake = wake
        """Called when new permits arrive (the dispatcher may be waiting for them)."""
        self.held = 0
        self.taken = 0
        """Permits ever taken (part of the node's activity figure)."""
        self.exhausted = False
        """The last take got none: the dispatcher does not ask again; the beat does."""
        self._taking: asyncio.Task[None] | None = None

    def allows(self, used: int, wanted: bool) -> bool:
        """May one more fetch start? If not and ``wanted`` (items are queued), take a batch
        in the background (the dispatcher is woken when it arrives)."""
        if used < self.held:
            return True
        if wanted and not self.exhausted and self._taking is None:
            self._taking = asyncio.get_running_loop().create_task(self._take_soon())
        return False

    def blocked(self, used: int) -> bool:
        """Wants permits, holds none unused, and the crawl-wide count is at the limit."""
        return self.exhausted and used >= self.held

    async def _take_soon(self) -> None:
        try:
            await self.take()
        except BackendUnavailable:
            self.exhausted = True  # the beat retries (and reports the outage)
        finally:
            self._taking = None

    async def take(self) -> int:
        """Take up to a batch now; returns how many came."""
        got = await self.counters.take_permits(COUNTER, self.max_pages, self.batch)
        self.held += got
        self.taken += got
        self.exhausted = got == 0
        if got:
            self.wake()
        return got

    async def beat(self, used: int, wanted: bool, idle: bool) -> None:
        """Every beat, before the node reports whether it is idle: give unused permits back
        if there is nothing to do, or ask again if blocked (permits may have come back)."""
        if idle and self.held > used:
            await self.give_back(used)
        elif wanted and used >= self.held:  # blocked, or the dispatcher has not asked (yet)
            await self.take()

    async def give_back(self, used: int) -> None:
        """Return the permits not used (at the end, or when idle). Taken off ``held`` first,
        so the dispatcher cannot spend them while the call is under way."""
        spare = self.held - used
        if spare <= 0:
            return
        self.held -= spare
        try:
            await self.counters.incr(COUNTER, -spare)
        except BaseException:
            self.held += spare
            raise
