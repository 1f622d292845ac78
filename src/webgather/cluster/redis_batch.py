"""Sends and acks of one event-loop turn, to Redis in one script call.

A node's router flushes a few hundred small per-bucket batches at once (one
stream per bucket: 400 hosts spread over 4096 buckets make ~2 URLs a message),
and a node acks what it received bucket by bucket. One script call each cost a
round trip and, in a profile of ``--workers 2``, a large share of both nodes'
CPU in redis-py's command packing and reply parsing, and the embedded Redis's.
So :class:`Coalescer` queues every call made in the same event-loop turn (the
``asyncio.gather`` of the router, of ``send_many`` and of the acks) and runs
them as one ``SEND_MANY`` / ``ACK_MANY`` script (at most ``MAX_PER_CALL`` each),
answering each caller with its own result.

Guarantees are the single calls': a ``send`` returns only once its payload is
stored (the script ran), so the page barrier and the hand-off order hold (sends
to one bucket keep their call order inside a script); if the call fails, every
caller in it gets the error and retries its own payload (at worst sent twice,
which the seen-test absorbs, as for a single send).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from webgather.cluster._redis_keys import Keys
from webgather.errors import ClusterError

__all__ = ["MAX_PER_CALL", "Coalescer", "acker", "sender"]

MAX_PER_CALL = 512
"""Calls per script: Lua's ``unpack`` and a reply stay small, and one script never holds the server long."""

Item = TypeVar("Item")
Result = TypeVar("Result")
Run = Callable[[list[Item]], Awaitable[Sequence[Result]]]
"""Runs a list of calls in one go; returns one result per call, in order (or raises for them all)."""


class Coalescer(Generic[Item, Result]):
    """Queues calls; a task started by the turn's first call runs the whole queue (module docstring)."""

    def __init__(self, run: Run[Item, Result], max_per_call: int = MAX_PER_CALL) -> None:
        self._run = run
        self._max = max_per_call
        self._queue: list[tuple[Item, asyncio.Future[Result]]] = []
        self._task: asyncio.Task[None] | None = None
        self.calls = 0
        """Script calls made (for tests and figures)."""

    async def submit(self, item: Item) -> Result:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._queue.append((item, future))
        if self._task is None:
            # Scheduled after the callbacks already ready: every call of this turn joins the queue first.
            self._task = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                taken, self._queue = self._queue[:self._max], self._queue[self._max:]
                await self._one_call(taken)
        finally:  # cancelled (the loop is closing): nobody would answer the callers still queued
            self._task = None
            left, self._queue = self._queue, []
            for _item, future in left:
                future.cancel()

    async def _one_call(self, taken: list[tuple[Item, asyncio.Future[Result]]]) -> None:
        self.calls += 1
        try:
            results = list(await self._run([item for item, _f in taken]))
            if len(results) != len(taken):
                raise ClusterError(f"a batched call gave {len(results)} results for {len(taken)} calls")
        except asyncio.CancelledError:
            for _item, future in taken:
                future.cancel()
            raise
        except Exception as exc:  # handed to each caller, who owns the error (and retries)
            for _item, future in taken:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_item, future), result in zip(taken, results):
            if not future.done():  # a caller cancelled meanwhile: its payload was sent anyway (at least once)
                future.set_result(result)


Script = Callable[[str, Sequence[str], Sequence[Any]], Awaitable[Any]]
"""Runs a named Lua script of :mod:`webgather.cluster._redis_scripts` (``RedisBackend.run``)."""


def sender(script: Script, keys: Keys, group: str) -> Coalescer[tuple[int, bytes], str]:
    """Coalesced ``SEND`` s: (bucket, payload) -> the delivery id."""
    async def run(items: list[tuple[int, bytes]]) -> list[str]:
        flat = [v for bucket, payload in items for v in (bucket, payload)]
        ids = await script("SEND_MANY", [keys.ready, keys.bell, *(keys.stream(b) for b, _p in items)], [group, *flat])
        return [bytes(i).decode("ascii") for i in ids]
    return Coalescer(run)


def acker(script: Script, keys: Keys, group: str) -> Coalescer[tuple[int, list[str]], int]:
    """Coalesced ``ACK`` s: (bucket, delivery ids) -> how many were pending."""
    async def run(items: list[tuple[int, list[str]]]) -> list[int]:
        flat = [v for _b, ids in items for v in (len(ids), *ids)]
        counts = await script("ACK_MANY", [keys.stream(b) for b, _ids in items], [group, *flat])
        return [int(n) for n in counts]
    return Coalescer(run)
