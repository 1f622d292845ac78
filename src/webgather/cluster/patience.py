"""A node's first steps with its backend, retried through an outage no longer than ``max_outage_s``.

A running node pauses while Redis is away and stops (exit 6) past ``max_outage_s``
(:mod:`webgather.cluster.outage`). A node that starts, restarts or joins meets the same outages, so its
first steps (connect, read or publish the crawl's definition, claim the shared store) get the same
patience and the same two log lines, never the one-line usage error of a bad command line.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from webgather.cluster.outage import Outage
from webgather.errors import BackendBusy, BackendUnavailable, CannotContinue, WriteFailed

__all__ = ["within_outage"]

log = logging.getLogger(__name__)
T = TypeVar("T")


async def within_outage(step: Callable[[], Awaitable[T]], *, node: str, max_outage_s: float,
                        what: str = "backend", poll_s: float = 0.5,
                        retry: tuple[type[Exception], ...] = (BackendUnavailable,)) -> T:
    """``step()``, run again while it raises one of ``retry`` (the service is away), for up to
    ``max_outage_s`` from the first try; past it CannotContinue (the CLI's exit 6). BackendBusy, a
    WriteFailed of the node's own disk and every other error pass through."""
    outage = Outage(node, max_outage_s, what, now=time.monotonic())
    while True:
        try:
            result = await step()
        except (BackendBusy, WriteFailed):
            raise
        except retry as exc:
            now = time.monotonic()
            line = outage.failed(now, str(exc))
            if line is not None:
                log.warning(line)
            if outage.exceeded(now):
                raise CannotContinue(outage.error_text()) from None
            await asyncio.sleep(poll_s)
            continue
        back = outage.succeeded(time.monotonic())
        if back is not None:
            log.warning(back)
        return result
