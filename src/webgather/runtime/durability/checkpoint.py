"""Checkpoints of a cluster node's buckets in the shared store: the durability invariant.

With ``--shared-store`` (``[cluster] shared_store``), losing any one node
together with its disk loses no discovered URL and no archived page. Every
``checkpoint_s`` (sooner once the node is idle with deliveries to ack) a node:

1. **snapshots** (under the bucket keeper's lock, in one synchronous step, so
   no delivery is half applied and no page completes in between) every bucket
   it holds: its queued items *and the items in flight* (a page counts as done
   only if it completed before the snapshot), seen keys, host clocks and
   re-crawl rows (the hand-off export, non-destructive), and takes the list of
   stream deliveries applied so far; a bucket that changed also carries its
   hosts' settled robots state and cookies (``runtime.engine.host_settled``: a
   restore brings them to the new owner, the robots TTL counted from the snapshot);
2. **rotates** its WARC file and ships every closed file with its CDXJ
   (:mod:`webgather.store.shipping`): a page done in the snapshot completed
   after its record was written, so its record is in a closed file now;
3. **puts** each bucket whose content changed under ``checkpoints/<node>/<bucket>``
   (the hand-off encoding, sender = this node, seq = the table version), then
   ``checkpoints/<node>/manifest.json`` (the buckets it holds with content, every bucket it
   holds at all: ``held``, the version, the time);
4. only then **acks** the deliveries of step 1 (:class:`HeldAcks` keeps every
   ack of the receive loop until then): a cross URL or hand-off received
   since the last checkpoint stays in its Redis stream, and the node that
   recovers the bucket re-claims it (``claim_stale``).

URLs a node routes to its own buckets bypass the streams. They are covered:
a link found on a page done before the snapshot was queued before that page
completed (the page barrier), so it is in the snapshot; a link found on a page
done after it comes back when the new owner fetches that page again (it is
queued in the checkpoint). Before a hand-off's bucket states are sent, the node
ships its WARC files too (:meth:`Checkpointer.ship_retrying`, the keeper's ``before_send``):
the new owner's checkpoints count those pages as done.

What a lost node costs: the pages it completed since its last checkpoint's
snapshot, plus those in flight, are fetched again by the new owners (at the
default ``checkpoint_s`` = 10 s: ten seconds of that node's pages, plus the
time a checkpoint takes). Redis holds at most one checkpoint interval of
un-acked deliveries per node: it does not grow with the crawl.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from webgather.cluster.transport import Delivery, UrlTransport
from webgather.cluster.wire import encode_handoff
from webgather.errors import BackendUnavailable, CannotContinue, StoreError
from webgather.frontier.bucket import BucketState, HostClock
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.engine.host_settled import with_settled
from webgather.store.shared import SharedStore
from webgather.store.shipping import WarcShipper

if TYPE_CHECKING:
    from webgather.runtime.member.node import ClusterNode

__all__ = ["Checkpointer", "HeldAcks", "checkpoint_key", "manifest_key", "snapshot_bucket"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

POLL_S = 0.1
IDLE_MIN_S = 0.3
RETRY_MIN_S = 0.1
RETRY_MAX_S = 5.0
"""An idle node with deliveries to ack checkpoints once this long after its last one (the crawl's end waits on it)."""


def checkpoint_key(node: str, bucket: int) -> str:
    return f"checkpoints/{node}/{bucket}"


def manifest_key(node: str) -> str:
    return f"checkpoints/{node}/manifest.json"


class HeldAcks:
    """A :class:`UrlTransport` whose ``ack`` only remembers the ids; :meth:`take` hands them to the
    checkpoint, which acks them through ``inner`` once its checkpoint is stored."""

    def __init__(self, inner: UrlTransport) -> None:
        self.inner = inner
        self.held: dict[int, list[str]] = defaultdict(list)

    async def send(self, bucket: int, payload: bytes) -> str:
        return await self.inner.send(bucket, payload)

    async def receive(self, buckets: Sequence[int], max_batches: int, block_s: float) -> list[Delivery]:
        return await self.inner.receive(buckets, max_batches, block_s)

    async def ack(self, bucket: int, delivery_ids: Sequence[str]) -> int:
        self.held[bucket].extend(delivery_ids)
        return len(delivery_ids)

    async def claim_stale(self, buckets: Sequence[int], min_idle_s: float, max_batches: int = 1000) -> list[Delivery]:
        return await self.inner.claim_stale(buckets, min_idle_s, max_batches)

    async def requeue(self, node: str, buckets: Sequence[int]) -> int:
        return await self.inner.requeue(node, buckets)

    async def pending_count(self, bucket: int) -> int:
        return await self.inner.pending_count(bucket)

    async def pending_total(self, buckets: Sequence[int]) -> int:
        return await self.inner.pending_total(buckets)

    def take(self) -> dict[int, list[str]]:
        held, self.held = self.held, defaultdict(list)
        return held

    def give_back(self, acks: dict[int, list[str]]) -> None:
        for bucket, ids in acks.items():
            self.held[bucket][:0] = ids


def snapshot_bucket(frontier: Frontier, bucket: int, flying: dict[str, list[CrawlItem]],
                    held_wait_s: float) -> BucketState:
    """The bucket's export with its items in flight queued again (``flying``: by host), and a
    held host's infinite wait (a hand-off under way) replaced by ``held_wait_s``."""
    state = frontier.export_bucket(bucket)
    extra = [item for host in frontier.hosts_of_bucket.get(bucket, ()) for item in flying.get(host, ())]
    clocks = tuple(c if math.isfinite(c.wait_s) else HostClock(c.host, held_wait_s, c.crawl_delay_s, c.errors,
                                                                c.ip, c.accepted) for c in state.hosts)
    return BucketState(bucket, state.n_buckets, state.items + tuple(extra), state.seen_keys, clocks)


@dataclass(slots=True)
class _Snapshot:
    version: int
    wall: float
    """When it was taken (what the new owners refetch is what the node completed after this)."""
    buckets: list[int]
    """Every bucket held with any content."""
    changed: list[tuple[int, tuple[int, ...], bytes]]
    """(bucket, signature, payload) of those changed since their last put."""
    acks: dict[int, list[str]]
    owned: list[int]
    """Every bucket held, content or not (a bucket still awaited is not: its state is elsewhere)."""


class Checkpointer:
    """The checkpoint loop of one cluster node (module docstring)."""

    def __init__(self, node: ClusterNode, store: SharedStore, acks: HeldAcks) -> None:
        """``acks``: the node's bucket keeper acks through it (built with it), so that the acks of what
        it applied wait for the checkpoint that holds it; ``node`` ships through :meth:`ship_retrying`
        before a hand-off's states are sent."""
        self.node = node
        self.store = store
        self.every_s = node.parts.config.cluster.checkpoint_s
        self.acks = acks
        self.shipper = WarcShipper(store, node.parts.out_dir / "warc", node.node_id)
        self.counts: Counter[str] = Counter()
        self.closed = False
        self._signatures: dict[int, tuple[int, ...]] = {}
        self._ship_lock = asyncio.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wg-shared")
        self._failing = False

    async def run(self) -> None:
        """Checkpoint every ``checkpoint_s``, or sooner when idle with acks held, until :meth:`close`.
        A checkpoint that fails in a way no retry is made for stops the node (exit 6, its state kept):
        without checkpoints its held acks never reach the streams and the crawl's end is never seen."""
        try:
            await self._loop()
        except Exception as exc:  # noqa: BLE001 - whatever it was, the node must not wait forever on it
            log.error("node %s: checkpoints stopped: %s: %s", self.node.node_id, type(exc).__name__, exc)
            self.node.give_up(CannotContinue(f"node {self.node.node_id}: checkpoints stopped: "
                                             f"{type(exc).__name__}: {exc}"), "checkpoints stopped")

    async def _loop(self) -> None:
        clock = self.node.parts.clock
        last = clock.monotonic()
        while not self.closed:
            await asyncio.sleep(POLL_S)
            waited = clock.monotonic() - last
            if waited >= self.every_s or (waited >= IDLE_MIN_S and self.acks.held and self.node.idle()):
                await self.checkpoint()
                last = clock.monotonic()

    async def checkpoint(self) -> bool:
        """Snapshot, ship WARCs, put the buckets, ack (module docstring); False if the store or
        Redis failed (the acks are kept for the next one)."""
        started = self.node.parts.clock.monotonic()
        snap = await self._snapshot()
        self.counts["snapshot_ms_max"] = max(self.counts["snapshot_ms_max"],
                                             round(1000 * (self.node.parts.clock.monotonic() - started)))
        try:
            await self.ship()
            await self._in_thread(self._put, snap)
            await self._ack(snap.acks)
        except (StoreError, BackendUnavailable) as exc:
            self.acks.give_back(snap.acks)
            self.counts["failed"] += 1
            if not self._failing:
                log.warning("node %s: checkpoint failed, will retry: %s", self.node.node_id, exc)
            self._failing = True
            return False
        if self._failing:
            log.warning("node %s: checkpoints work again", self.node.node_id)
        self._failing = False
        self.counts["checkpoints"] += 1
        return True

    async def ship(self, _buckets: Sequence[int] = ()) -> None:
        """Rotate the WARC file and ship every closed one (before a checkpoint's puts, and before a
        hand-off's states are sent)."""
        async with self._ship_lock:
            closed, index_bytes = await self.node.parts.writer.rotate()
            self.counts["warc_files"] += await self._in_thread(self.shipper.ship, closed, index_bytes)

    async def ship_retrying(self, _buckets: Sequence[int] = ()) -> None:
        """:meth:`ship` until it succeeds (before a hand-off: the new owner counts those pages as done,
        so their records must be in the store first; the hand-off waits while the store is down)."""
        wait_s = RETRY_MIN_S
        while not self.closed:
            try:
                return await self.ship()
            except StoreError as exc:
                self.counts["ship_retries"] += 1
                if self.closed:
                    raise
                log.warning("node %s: cannot ship WARC files before a hand-off, retrying: %s",
                            self.node.node_id, exc)
                await asyncio.sleep(wait_s)
                wait_s = min(RETRY_MAX_S, 2 * wait_s)
        raise StoreError(f"node {self.node.node_id}: closed before its WARC files could be shipped")

    async def left(self) -> None:
        """After a graceful leave: every bucket went out in a hand-off (a stream message the new owner
        keeps until its own checkpoint), so what was applied here needs no checkpoint to be acked; and
        the manifest says the node holds nothing. Left listing the buckets it handed over, it stood for
        their state if the node came back under its id and died before its first checkpoint: the restore
        sent those old states, and their new owner fetched again what had been fetched since (nemesis
        file seed 25). A store that fails here leaves the old manifest: said once, the leave goes on."""
        await self._ack(self.acks.take())
        empty = _Snapshot(self.node.ownership.version or 0, self.node.parts.clock.wall(), [], [], {}, [])
        try:
            await self._in_thread(self._put, empty)
        except StoreError as exc:
            log.warning("node %s: left, but its checkpoint manifest still lists its old buckets: %s",
                        self.node.node_id, exc)

    def close(self) -> None:
        self.closed = True
        self._pool.shutdown(wait=True)

    def ship_all(self) -> int:
        """At the end, the archive closed: ship what is left (blocking)."""
        shipped = self.shipper.ship_all()
        self.counts["warc_files"] += shipped
        return shipped

    async def _in_thread(self, fn: Callable[..., _T], *args: object) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def _snapshot(self) -> _Snapshot:
        node = self.node
        frontier, keeper, ownership = node.parts.frontier, node.keeper, node.ownership
        async with keeper.lock:  # nothing awaits below: no page completes, no delivery applies meanwhile
            acks = self.acks.take()
            flying: dict[str, list[CrawlItem]] = defaultdict(list)
            for fp, item in frontier.flying.items():
                flying[frontier.in_flight_items[fp]].append(item)
            version = ownership.version or 0
            held: list[int] = []
            owned = sorted(ownership.ready | ownership.leaving)
            changed: list[tuple[int, tuple[int, ...], bytes]] = []
            for bucket in owned:
                state = snapshot_bucket(frontier, bucket, flying, node.parts.config.politeness.min_delay_s)
                rows = keeper.rows.export(bucket) if keeper.rows is not None else []
                if not (state.items or state.hosts or len(state.seen_keys) or rows):
                    continue
                held.append(bucket)
                signature = (len(state.items), len(state.seen_keys), len(rows), sum(i.attempt for i in state.items))
                if self._signatures.get(bucket) != signature:  # its hosts' robots rules and cookies ride along
                    state = with_settled(node.parts, state)
                    changed.append((bucket, signature, encode_handoff(node.node_id, version, state, rows)))
        return _Snapshot(version, node.parts.clock.wall(), held, changed, acks, owned)

    def _put(self, snap: _Snapshot) -> None:
        node_id = self.node.node_id
        for bucket, signature, payload in snap.changed:
            self.store.put_bytes(checkpoint_key(node_id, bucket), payload)
            self._signatures[bucket] = signature
            self.counts["bucket_puts"] += 1
            self.counts["bucket_bytes"] += len(payload)
        manifest = {"node": node_id, "version": snap.version, "wall": round(snap.wall, 3), "buckets": snap.buckets,
                    "held": snap.owned}
        self.store.put_bytes(manifest_key(node_id), json.dumps(manifest).encode())

    async def _ack(self, acks: dict[int, list[str]]) -> None:
        pending = [(bucket, ids) for bucket, ids in acks.items() if ids]
        for start in range(0, len(pending), 64):
            chunk = pending[start:start + 64]
            await asyncio.gather(*(self.acks.inner.ack(bucket, ids) for bucket, ids in chunk))
            for bucket, ids in chunk:  # acked: not given back if a later chunk fails
                acks[bucket] = []
                self.counts["acked"] += len(ids)
