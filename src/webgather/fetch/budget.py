"""The node's budget of decoded bytes in flight: what bounds decoding memory across fetches.

A gzip body of 121 KB can decode to 50 MB (under ``max_decoded_bytes``): with 64
such pages fetched at once, each holding its decoded body until it is parsed and
archived, a node reached 6 GB of RSS. :class:`DecodeBudget` counts the decoded
bytes of every fetch result alive; a fetch reserves ``max_decoded_bytes`` before
decoding (decoding runs on the loop, in one go), keeps what its body took, and
gives that back when its :class:`FetchResult` is dropped (``weakref.finalize``:
nobody has to remember). A fetch that finds the budget full waits, FIFO; one
that waits longer than the fetch's ``total_timeout_s`` ends as ``timeout`` (and is
retried) rather than waiting for a page held forever.

The limit is :data:`BUDGET_PAGES` times ``max_decoded_bytes`` (200 MB by
default): that many pages of the largest size at once, any number of small ones.
Bodies that are not content-encoded are not counted: their size on the wire is
already bounded by ``max_body_bytes`` and the transport's concurrency. Pure asyncio.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

from webgather.fetch.model import FetchResult

__all__ = ["BUDGET_PAGES", "DecodeBudget"]

BUDGET_PAGES = 4


class DecodeBudget:
    """Decoded bytes in flight on this node, at most ``limit``; see the module docstring."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        """The most ever reserved at once (for tests and figures)."""
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def reserve(self, size: int) -> None:
        """Take ``size`` bytes, waiting while they would pass the limit (one taker may always go)."""
        if self._waiters or not self._fits(size):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                while not (self._waiters[0] is waiter and self._fits(size)):
                    await waiter
                    waiter = self._renew(waiter)
            finally:
                self._waiters.remove(waiter)
                self._wake()
        self.used += size
        self.peak = max(self.peak, self.used)

    def release(self, size: int) -> None:
        self.used -= size
        self._wake()

    def hold_while_alive(self, result: FetchResult, size: int) -> None:
        """Give ``size`` bytes back when ``result`` is dropped."""
        if size:
            weakref.finalize(result, self.release, size)

    def _fits(self, size: int) -> bool:
        return self.used == 0 or self.used + size <= self.limit

    def _renew(self, waiter: asyncio.Future[None]) -> asyncio.Future[None]:
        """A fresh future in ``waiter``'s place in the queue (a woken one cannot be awaited again)."""
        fresh = asyncio.get_running_loop().create_future()
        self._waiters[self._waiters.index(waiter)] = fresh
        return fresh

    def _wake(self) -> None:
        if self._waiters and not self._waiters[0].done():
            self._waiters[0].set_result(None)
