"""The in-process cluster backend: N nodes in one process, no server.

One :class:`InProcessHub` holds everything the Redis backend keeps in Redis:
a stream per bucket (payloads in send order, a cursor of what was never
delivered, and the pending deliveries with their node and delivery time), the
bucket table, members with expiry times, the lease, the crawl's settings,
counters and the shared host addresses. Every node gets its own :class:`InProcessTransport` from
``hub.transport(node)``; they share ``hub.coordinator()``.

Semantics are those of :mod:`webgather.cluster.transport` (the contract suite
holds both backends to them). Idle times, heartbeat and lease expiry read the
hub's injected :class:`~webgather.clock.Clock`, so a test with a
:class:`~webgather.clock.FakeClock` moves time with ``advance``.
``receive(block_s=...)`` waits on the event loop's own timer (the wait is real
time, it is woken by any ``send``). All methods run on one event loop; nothing
is shared across threads. State lives in memory only: it ends with the process.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from webgather.cluster import _common as common
from webgather.cluster.mapping import DEFAULT_BUCKETS, MAX_BUCKETS, BucketTable
from webgather.cluster.transport import Delivery
from webgather.errors import ClusterError
from webgather.clock import Clock, SystemClock

__all__ = ["InProcessCoordinator", "InProcessHub", "InProcessTransport"]


class _Stream:
    """One bucket's payloads that are not acked yet."""

    __slots__ = ("fresh", "next_id", "payloads", "pending")

    def __init__(self) -> None:
        self.payloads: dict[int, bytes] = {}
        self.fresh: deque[int] = deque()
        """Ids never delivered, in send order."""
        self.pending: dict[int, tuple[str, float]] = {}
        """Delivered, not acked: id -> (node, delivered at)."""
        self.next_id = 1


class InProcessHub:
    """Shared state of the nodes of one in-process crawl (a :class:`Backend`)."""

    def __init__(self, n_buckets: int = DEFAULT_BUCKETS, clock: Clock | None = None) -> None:
        if isinstance(n_buckets, bool) or not isinstance(n_buckets, int) or not 1 <= n_buckets <= MAX_BUCKETS:
            raise ClusterError(f"n_buckets must be in 1..{MAX_BUCKETS}, got {n_buckets!r}")
        self.n_buckets = n_buckets
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.streams: dict[int, _Stream] = {}
        self._waiters: set[asyncio.Future[None]] = set()
        self._coordinator = InProcessCoordinator(self.clock)

    def transport(self, node: str) -> InProcessTransport:
        """The transport of ``node`` (a new object each call; state is in the hub)."""
        return InProcessTransport(self, common.check_node(node))

    def coordinator(self) -> InProcessCoordinator:
        """The crawl's coordinator (one per hub)."""
        return self._coordinator

    async def aclose(self) -> None:
        """Nothing to release; present for the :class:`Backend` protocol."""

    def stream(self, bucket: int) -> _Stream:
        found = self.streams.get(bucket)
        if found is None:
            found = self.streams[bucket] = _Stream()
        return found

    def wake(self) -> None:
        """Wake every ``receive`` that is waiting for a payload."""
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def wait_for_send(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)


class InProcessTransport:
    """:class:`~webgather.cluster.transport.UrlTransport` of one node over a hub."""

    def __init__(self, hub: InProcessHub, node: str) -> None:
        self.hub = hub
        self.node = node
        self._turn = 0

    async def send(self, bucket: int, payload: bytes) -> str:
        (bucket,) = common.check_buckets([bucket], self.hub.n_buckets)
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise ClusterError(f"payload must be bytes, got {type(payload).__name__}")
        stream = self.hub.stream(bucket)
        delivery_id = stream.next_id
        stream.next_id += 1
        stream.payloads[delivery_id] = bytes(payload)
        stream.fresh.append(delivery_id)
        self.hub.wake()
        return str(delivery_id)

    async def receive(self, buckets: Sequence[int], max_batches: int, block_s: float) -> list[Delivery]:
        wanted = common.check_buckets(buckets, self.hub.n_buckets)
        common.check_count("max_batches", max_batches)
        common.check_seconds("block_s", block_s)
        got = self._take(wanted, max_batches)
        if got or block_s == 0 or not wanted:
            return got
        try:
            async with asyncio.timeout(block_s):
                while not got:
                    await self.hub.wait_for_send()
                    got = self._take(wanted, max_batches)
        except TimeoutError:
            pass
        return got

    def _take(self, buckets: list[int], max_batches: int) -> list[Delivery]:
        now = self.hub.clock.monotonic()
        self._turn += 1
        out: list[Delivery] = []
        for bucket in self._order(buckets):
            stream = self.hub.streams.get(bucket)
            while stream is not None and stream.fresh and len(out) < max_batches:
                delivery_id = stream.fresh.popleft()
                stream.pending[delivery_id] = (self.node, now)
                out.append(Delivery(bucket, str(delivery_id), stream.payloads[delivery_id]))
        return out

    def _order(self, buckets: list[int]) -> list[int]:
        """The buckets to look at, from a start that turns with each call (fair round-robin). With
        fewer streams than buckets (a one-node crawl asks for all 4096), only streams with fresh payloads."""
        streams = self.hub.streams
        if not buckets or len(streams) >= len(buckets):
            return common.rotate(buckets, self._turn)
        wanted = set(buckets)
        ready = [b for b, stream in streams.items() if stream.fresh and b in wanted]
        pivot, n = buckets[self._turn % len(buckets)], self.hub.n_buckets
        return sorted(ready, key=lambda b: (b - pivot) % n)

    async def ack(self, bucket: int, delivery_ids: Sequence[str]) -> int:
        (bucket,) = common.check_buckets([bucket], self.hub.n_buckets)
        stream = self.hub.streams.get(bucket)
        done = 0
        for raw in common.check_ids(delivery_ids):
            delivery_id = _parse_id(raw)
            if stream is not None and delivery_id is not None and delivery_id in stream.pending:
                del stream.pending[delivery_id], stream.payloads[delivery_id]
                done += 1
        return done

    async def claim_stale(self, buckets: Sequence[int], min_idle_s: float,
                          max_batches: int = 1000) -> list[Delivery]:
        wanted = common.check_buckets(buckets, self.hub.n_buckets)
        min_idle_s = common.check_seconds("min_idle_s", min_idle_s)
        common.check_count("max_batches", max_batches)
        now = self.hub.clock.monotonic()
        out: list[Delivery] = []
        for bucket in wanted:
            stream = self.hub.streams.get(bucket)
            if stream is None:
                continue
            for delivery_id, (_node, since) in list(stream.pending.items()):
                if len(out) >= max_batches:
                    return out
                if now - since >= min_idle_s:
                    stream.pending[delivery_id] = (self.node, now)
                    out.append(Delivery(bucket, str(delivery_id), stream.payloads[delivery_id]))
        return out

    async def requeue(self, node: str, buckets: Sequence[int]) -> int:
        node = common.check_node(node)
        moved = 0
        for bucket in common.check_buckets(buckets, self.hub.n_buckets):
            stream = self.hub.streams.get(bucket)
            if stream is None:
                continue
            for delivery_id, (reader, _since) in list(stream.pending.items()):
                if reader == node:
                    del stream.pending[delivery_id]
                    stream.payloads[stream.next_id] = stream.payloads.pop(delivery_id)
                    stream.fresh.append(stream.next_id)
                    stream.next_id += 1
                    moved += 1
        if moved:
            self.hub.wake()
        return moved

    async def pending_count(self, bucket: int) -> int:
        (bucket,) = common.check_buckets([bucket], self.hub.n_buckets)
        stream = self.hub.streams.get(bucket)
        return len(stream.payloads) if stream is not None else 0

    async def pending_total(self, buckets: Sequence[int]) -> int:
        streams = self.hub.streams
        return sum(len(s.payloads) for b in common.check_buckets(buckets, self.hub.n_buckets)
                   if (s := streams.get(b)) is not None)


def _parse_id(raw: str) -> int | None:
    return int(raw) if isinstance(raw, str) and raw.isdigit() and raw.isascii() else None


class InProcessCoordinator:
    """:class:`~webgather.cluster.transport.Coordinator` kept in memory."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._table: BucketTable | None = None
        self._settings: dict[str, Any] | None = None
        self._members: dict[str, tuple[str, float]] = {}
        """node -> (info JSON, expires at)."""
        self._lease: tuple[str, float] | None = None
        self._counters: dict[str, int] = {}
        self._addresses: dict[str, str] = {}

    async def get_table(self) -> BucketTable | None:
        return self._table

    async def cas_table(self, expected_version: int | None, new: BucketTable) -> bool:
        common.check_cas(expected_version, new, self._table)
        current = None if self._table is None else self._table.version
        if current != expected_version:
            return False
        self._table = new
        return True

    async def register_crawl(self, settings: Mapping[str, Any], *, defined: bool = False) -> dict[str, Any]:
        # defined: the hub lives in this process and cannot lose a definition it was given
        _text, given = common.mapping_json(settings, "crawl settings")
        if self._settings is None:
            self._settings = given
        else:
            common.settings_mismatch(self._settings, given)
        return dict(self._settings)

    async def heartbeat(self, node: str, info: Mapping[str, Any], ttl_s: float) -> None:
        common.check_node(node)
        ttl_s = common.check_seconds("ttl_s", ttl_s, positive=True)
        self._members[node] = (common.mapping_json(info, "member info")[0], self.clock.monotonic() + ttl_s)

    async def members(self) -> dict[str, dict[str, Any]]:
        now = self.clock.monotonic()
        for node in [n for n, (_info, expires) in self._members.items() if expires <= now]:
            del self._members[node]
        return {n: common.from_json(info, "member info") for n, (info, _e) in sorted(self._members.items())}

    async def leave(self, node: str) -> None:
        common.check_node(node)
        self._members.pop(node, None)
        if self._lease is not None and self._lease[0] == node:
            self._lease = None

    async def try_lease(self, node: str, ttl_s: float) -> bool:
        common.check_node(node)
        ttl_s = common.check_seconds("ttl_s", ttl_s, positive=True)
        now = self.clock.monotonic()
        if self._lease is None or self._lease[1] <= now or self._lease[0] == node:
            self._lease = (node, now + ttl_s)
            return True
        return False

    async def incr(self, name: str, n: int = 1) -> int:
        common.check_counter(name, n)
        value = self._counters.get(name, 0) + n
        if not common.INT64_MIN <= value <= common.INT64_MAX:
            raise ClusterError(f"counter {name!r} would overflow a 64-bit integer")
        self._counters[name] = value
        return value

    async def counters(self) -> dict[str, int]:
        return dict(sorted(self._counters.items()))


    async def take_permits(self, name: str, limit: int, n: int) -> int:
        common.check_permits(name, limit, n)
        take = max(0, min(n, limit - self._counters.get(name, 0)))
        if take:
            self._counters[name] = self._counters.get(name, 0) + take
        return take

    async def publish_addresses(self, answers: Mapping[str, str]) -> dict[str, str]:
        return {host: self._addresses.setdefault(host, address)
                for host, address in common.check_addresses(answers).items()}

    async def get_addresses(self, hosts: Sequence[str] | None = None) -> dict[str, str]:
        if hosts is None:
            return dict(self._addresses)
        return {h: self._addresses[h] for h in common.check_hosts(hosts) if h in self._addresses}
