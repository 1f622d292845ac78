"""The link router of a cluster node: own URLs to the local seen-test, cross URLs to their bucket's stream.

Inputs: the scope-checked items a page yields (links, redirect targets,
sitemap URLs) and the seeds. For each item the partition key (the host, or
its address with ``partition_by = "ip"``) gives the bucket (``bucket_of(key)
mod M``); if the bucket is one this node owns *and has the state of* (a
"ready" bucket, see :mod:`webgather.cluster.handoff`), the item goes straight
to ``add_local`` (the frontier's seen-test). Everything else is a cross URL:
it is appended to a per-bucket buffer that is sent as one
:func:`~webgather.cluster.wire.encode_batch` message on the bucket's stream
once it holds ``batch_urls`` URLs (R) or its oldest URL has waited
``batch_wait_s`` (T), whichever comes first (the BSP papers' one message per
destination per superstep, and Mercator's batches). Buckets this node owns but
is still waiting for (a hand-off under way) also go through their stream: the
stream keeps them in order behind the hand-off.

A sender-side cache of recently sent URL fingerprints (:mod:`webgather.cachepolicy`,
CLOCK or LRU; the URL-caching study) is consulted before a cross URL is
buffered: a hit means this node sent that URL recently, and the owner's
seen-test would only drop it again, so it costs no bytes (an item carrying OPIC
cash, ``priority < 0``, skips the cache: its cash is credited). ``stats`` counts
messages, URLs and bytes sent, URLs kept local and URLs the cache saved.

Crash safety (the page barrier): a page's completion must not be committed
before its cross URLs are stored in the backend, or a kill -9 would lose them
(the page would count as done, its links unsent). The node awaits
:meth:`Router.wait_routed` after routing a page's links and before completing
it; it returns once every URL routed by that call has been sent. So batching
costs each page up to T of extra time in flight, not a lost link.

Partition keys that need a lookup (``partition_by = "ip"``): ``partition_key``
returns None for a host whose shared address this node does not know yet.
Such items are *parked* (they count for the page barrier like buffered ones)
and one background task at a time calls ``learn`` for the hosts of every
parked item (one batched lookup, never blocking the event loop), then routes
them. See :mod:`webgather.runtime.partition.addresses`.

Sends are retried while the backend is unavailable (a page then waits at its
barrier: back-pressure, not loss). The flusher is :meth:`Router.run`, which the
node's task group runs.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from webgather.cachepolicy import CachePolicy
from webgather.cluster.mapping import bucket_of
from webgather.cluster.transport import UrlTransport
from webgather.cluster.wire import encode_batch
from webgather.errors import BackendUnavailable, ClusterError
from webgather.frontier.model import CrawlItem
from webgather.clock import Clock
from webgather.urls import host_key

__all__ = ["Router", "RouterStats", "send_many", "send_retrying"]

AddLocal = Callable[[list[CrawlItem], float], list[CrawlItem]]
Learn = Callable[[list[str]], Awaitable[None]]
"""Make the partition keys of these host keys known (may raise BackendUnavailable: retried)."""
SEND_CONCURRENCY = 16
"""Batches sent at once by the flusher."""
RETRY_MIN_S = 0.05
RETRY_MAX_S = 2.0
MEMO_MAX_ENTRIES = 200_000


@dataclass(slots=True)
class RouterStats:
    """What routing cost: the documents' cross-URL traffic figures."""

    messages: int = 0
    """Cross-URL batches sent."""
    urls: int = 0
    """Cross URLs sent."""
    bytes: int = 0
    """Payload bytes of those batches."""
    cache_saved: int = 0
    """Cross URLs not sent because the sent-URL cache had them."""
    local: int = 0
    """Items routed to this node's own seen-test."""
    send_retries: int = 0
    parked: int = 0
    """Items that waited for their host's address (``partition_by = "ip"``)."""

    def as_dict(self) -> dict[str, int]:
        return {"messages": self.messages, "urls": self.urls, "bytes": self.bytes, "cache_saved": self.cache_saved,
                "local": self.local, "send_retries": self.send_retries, "parked": self.parked}


@dataclass(slots=True)
class _Buffer:
    first_mark: int
    born_at: float
    items: list[CrawlItem] = field(default_factory=list)


async def send_retrying(transport: UrlTransport, bucket: int, payload: bytes) -> int:
    """``transport.send`` until it succeeds (the backend may be down a while); returns retries."""
    wait_s, retries = RETRY_MIN_S, 0
    while True:
        try:
            await transport.send(bucket, payload)
            return retries
        except BackendUnavailable:
            retries += 1
            await asyncio.sleep(wait_s)
            wait_s = min(RETRY_MAX_S, wait_s * 2)


async def send_many(transport: UrlTransport, messages: Sequence[tuple[int, bytes]],
                    concurrency: int = 64) -> int:
    """Send ``(bucket, payload)`` messages, ``concurrency`` at a time (each retried); returns retries.
    Order holds per bucket only if a bucket appears once."""
    retries = 0
    for start in range(0, len(messages), concurrency):
        chunk = messages[start:start + concurrency]
        retries += sum(await asyncio.gather(*(send_retrying(transport, b, p) for b, p in chunk)))
    return retries


class Router:
    """Splits items by owner; batches, caches and sends the cross URLs (module docstring)."""

    def __init__(self, node: str, transport: UrlTransport, clock: Clock, *, n_buckets: int,
                 add_local: AddLocal, is_local: Callable[[int], bool],
                 partition_key: Callable[[str], str | None] | None = None, batch_urls: int = 64,
                 batch_wait_s: float = 0.05, cache: CachePolicy | None = None, learn: Learn | None = None) -> None:
        self.node = node
        self.transport = transport
        self.clock = clock
        self.n_buckets = n_buckets
        self.add_local = add_local
        self.is_local = is_local
        self.partition_key = partition_key
        self.batch_urls = batch_urls
        self.batch_wait_s = batch_wait_s
        self.cache = cache
        self.learn = learn
        self.stats = RouterStats()
        self.seq = 0
        self._memo: dict[str, int] = {}
        self._buffers: dict[int, _Buffer] = {}
        self._sending: dict[int, int] = {}
        """token -> first mark of a batch being sent."""
        self._routed = 0
        self._pending_mark: int | None = None
        self._parked: list[tuple[int, CrawlItem]] = []
        """(mark, item) waiting for the host's partition key, in mark order."""
        self._learning: asyncio.Task[None] | None = None
        self._kick = asyncio.Event()
        self._progress = asyncio.Event()
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        """Pages at the barrier: a heap of (mark, arrival, future), woken by :meth:`_advanced`."""
        self._waiter_seq = 0
        self._closed = False

    # -- the hot path ------------------------------------------------------------------
    def bucket_of_host(self, host: str) -> int | None:
        """Bucket of a host key (memoized); None while its partition key is unknown."""
        bucket = self._memo.get(host)
        if bucket is None:
            key = self.partition_key(host) if self.partition_key is not None else host
            if key is None:
                return None
            if len(self._memo) >= MEMO_MAX_ENTRIES:
                self._memo.clear()
            bucket = self._memo[host] = bucket_of(key, self.n_buckets)
        return bucket

    def route(self, items: list[CrawlItem], now: float) -> list[CrawlItem]:
        """Route ``items``; returns those that were new at this node (the local ones)."""
        local: list[CrawlItem] = []
        mark = self._routed + 1
        remote = False
        for item in items:
            bucket = self.bucket_of_host(host_key(item.url))
            if bucket is None:
                self._park(item, mark)
                remote = True
            elif self.is_local(bucket):
                local.append(item)
            elif self._buffer(bucket, item, mark):
                remote = True
        if remote:
            self._routed = mark
            self._pending_mark = mark
        self.stats.local += len(local)
        return self.add_local(local, now) if local else []

    def _buffer(self, bucket: int, item: CrawlItem, mark: int) -> bool:
        if self.cache is not None and item.priority >= 0.0 and self.cache.access(item.fp):  # OPIC cash must travel
            self.stats.cache_saved += 1
            return False
        buffer = self._buffers.get(bucket)
        if buffer is None:
            buffer = self._buffers[bucket] = _Buffer(mark, self.clock.monotonic())
            self._kick.set()
        buffer.first_mark = min(buffer.first_mark, mark)  # a parked item routed late joins a newer buffer
        buffer.items.append(item)
        if len(buffer.items) >= self.batch_urls:
            self._kick.set()
        return True

    async def wait_routed(self) -> None:
        """Return once the cross URLs of the last :meth:`route` call are sent (the page barrier)."""
        mark, self._pending_mark = self._pending_mark, None
        if mark is None or self.sent_upto() >= mark:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiter_seq += 1
        heapq.heappush(self._waiters, (mark, self._waiter_seq, future))
        await future

    def _advanced(self) -> None:
        """Something was sent or routed: wake the pages whose marks are covered now. ``sent_upto`` is
        computed once here, not by every waiting page (with 256 pages waiting and ~200 buffers, each wake
        of every page recomputing it cost 1-2.5 % of a node's CPU in a profile of --workers 2)."""
        self._progress.set()
        upto = self.sent_upto() if self._waiters else 0
        while self._waiters and self._waiters[0][0] <= upto:
            future = heapq.heappop(self._waiters)[2]
            if not future.done():  # a page cancelled while it waited
                future.set_result(None)

    def sent_upto(self) -> int:
        """Every route call up to this mark has all its cross URLs sent."""
        firsts = [b.first_mark for b in self._buffers.values()] + list(self._sending.values())
        if self._parked:
            firsts.append(self._parked[0][0])
        return min(firsts) - 1 if firsts else self._routed

    def idle(self) -> bool:
        """Nothing buffered and nothing being sent."""
        return not self._buffers and not self._sending and not self._parked

    # -- items waiting for their host's partition key -------------------------------------------
    def _park(self, item: CrawlItem, mark: int) -> None:
        if self.learn is None:
            raise ClusterError("a partition key returned None but the router has no learn function")
        self._parked.append((mark, item))
        self.stats.parked += 1
        if self._learning is None and not self._closed:
            self._learning = asyncio.get_running_loop().create_task(self._learn_parked(self.learn))

    async def _learn_parked(self, learn: Learn) -> None:
        """Learn the keys of every parked item's host (one batch per round), then route them."""
        try:
            while self._parked and not self._closed:
                taken = len(self._parked)
                await learn(list(dict.fromkeys(host_key(item.url) for _m, item in self._parked[:taken])))
                if not self._route_parked(taken):
                    await asyncio.sleep(RETRY_MAX_S)  # learn() left some unknown: try them again
        finally:
            self._learning = None

    def _route_parked(self, taken: int) -> bool:
        """Route the first ``taken`` parked items whose key is now known (before unparking
        them: the barrier never sees an item in neither place); False if some are not."""
        local: list[CrawlItem] = []
        still: list[tuple[int, CrawlItem]] = []
        for mark, item in self._parked[:taken]:
            bucket = self.bucket_of_host(host_key(item.url))
            if bucket is None:
                still.append((mark, item))
            elif self.is_local(bucket):
                local.append(item)
            else:
                self._buffer(bucket, item, mark)
        if local:
            self.stats.local += len(local)
            self.add_local(local, self.clock.monotonic())
        self._parked[:taken] = still
        self._advanced()
        return not still

    # -- the flusher -----------------------------------------------------------------------
    def close(self) -> None:
        """End :meth:`run` (a cancellation can be lost inside the Redis client)."""
        self._closed = True
        self._kick.set()
        if self._learning is not None:
            self._learning.cancel()

    async def run(self) -> None:
        """Send buffers as they become due, until :meth:`close` (or cancelled)."""
        while not self._closed:
            due, wait_s = self._take_due(self.clock.monotonic())
            if due:
                await self._send_all(due)
                continue
            self._kick.clear()
            try:
                async with asyncio.timeout(None if math.isinf(wait_s) else max(wait_s, 0.001)):
                    await self._kick.wait()
            except TimeoutError:
                pass

    async def flush(self) -> None:
        """Route what is parked and send every buffer now (before a graceful stop or a hand-off)."""
        while self._parked and self._learning is not None:
            self._progress.clear()
            await self._progress.wait()
        while self._buffers:
            due = list(self._buffers.items())
            self._buffers.clear()
            await self._send_all(due)

    def _take_due(self, now: float) -> tuple[list[tuple[int, _Buffer]], float]:
        due: list[tuple[int, _Buffer]] = []
        next_at = math.inf
        for bucket, buffer in list(self._buffers.items()):
            deadline = buffer.born_at + self.batch_wait_s
            if len(buffer.items) >= self.batch_urls or deadline <= now:
                due.append((bucket, self._buffers.pop(bucket)))
            else:
                next_at = min(next_at, deadline)
        return due, next_at - now

    async def _send_all(self, due: Sequence[tuple[int, _Buffer]]) -> None:
        # Every taken buffer counts as "sending" from this instant, before any await: a page's
        # barrier must never see its URLs in neither place (sent_upto() would run ahead).
        tokens = []
        for _bucket, buffer in due:
            self.seq += 1
            tokens.append(self.seq)
            self._sending[self.seq] = buffer.first_mark
        for start in range(0, len(due), SEND_CONCURRENCY):  # a send cut short stays "sending": no barrier passes
            chunk = list(zip(tokens[start:start + SEND_CONCURRENCY], due[start:start + SEND_CONCURRENCY]))
            await asyncio.gather(*(self._send_one(token, bucket, buffer) for token, (bucket, buffer) in chunk))
            self._advanced()

    async def _send_one(self, token: int, bucket: int, buffer: _Buffer) -> None:
        payload = encode_batch(self.node, token, buffer.items)
        self.stats.send_retries += await send_retrying(self.transport, bucket, payload)
        del self._sending[token]
        self.stats.messages += 1
        self.stats.urls += len(buffer.items)
        self.stats.bytes += len(payload)
