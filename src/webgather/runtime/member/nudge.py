"""A wake-up between a node's beat loop and its lease loop, so that the crawl's end is not paced by sleeps.

The end of a crawl takes two waves (:mod:`webgather.cluster.membership`): a coordinator tick bumps
the ``probe`` counter, every node's next beat publishes it, the next tick sees them all idle, bumps
it again, and a third tick raises ``done``, which each node reads at its next beat. Paced by the
idle beat (``IDLE_BEAT_S``, 0.1 s) that is five sleeps after the last page: a one-node crawl of
the 400 x 20 static web spent 0.25 s between its last page and its shutdown (2026-11-27, quiet
machine). Instead, a tick that moved the end along nudges the node's own beat, and a beat that
published a new probe nudges the tick: on one node the waves run back to back.

A nudge only cuts an idle wait short, and at most ``max_in_row`` times before a wait runs its
course: an idle node whose waves do not hold (another node is busy, deliveries wait for their
checkpoint's ack) must not spin between its two loops.
"""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["Nudge"]

MAX_IN_ROW = 8


class Nudge:
    """One loop's wake-up (module docstring)."""

    def __init__(self, max_in_row: int = MAX_IN_ROW) -> None:
        self.max_in_row = max_in_row
        self._event = asyncio.Event()
        self._in_row = 0

    def set(self) -> None:
        self._event.set()

    async def wait(self, timeout_s: float) -> bool:
        """Sleep ``timeout_s`` or until nudged; True if nudged (counted), False if the time ran out."""
        if self._in_row >= self.max_in_row:
            self._event.clear()
            await asyncio.sleep(timeout_s)
            self._in_row = 0
            return False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._event.wait()
        if not self._event.is_set():
            self._in_row = 0
            return False
        self._event.clear()
        self._in_row += 1
        return True
