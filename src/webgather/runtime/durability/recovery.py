"""Recovering a dead node's buckets from its durable state, and the lock that makes it safe.

Every cluster node holds an exclusive lock on its own directory
(``DIR/nodes/<node>/node.lock``, ``fcntl.flock``) for as long as it runs; the
OS releases it when the process dies, kill -9 included.

When the coordinating node finds a node dead (no heartbeat for
``member_ttl_s``) it spreads the dead node's buckets over the live nodes and
then calls :func:`recover_node`:

1. Take the dead node's lock (non-blocking). If it is held, the node is alive
   again (restarted under its id): skip; that node hands its buckets over itself
   when it sees the new table.
2. If ``DIR/nodes/<dead>/state`` exists (one machine, or a shared ``--out``):
   open it as a frontier (the kill -9 resume path: the journal is replayed,
   items that were in flight are queued again), export every bucket the dead
   node owned and every other bucket its state still holds (one it lost in a
   new table, a join, and died before handing over: its new owner awaits it), with the bucket's re-crawl rows from its ``state/urls.sqlite``
   if it kept one and its hosts' settled robots state and cookies (``state/robots.sqlite``,
   ``state/cookies.json``), send each as a hand-off *under the dead node's id* on the
   bucket's stream (the new owner awaits exactly that), then drop them from the
   dead state so that a later restart of the node does not hand them over twice.
3. If there is no such directory (the node ran on another machine whose disk
   we cannot see, or its disk is lost): with a shared store, send each bucket's
   last checkpoint from there (:mod:`webgather.runtime.durability.restore`);
   without one, an empty hand-off for each of its buckets: the new owners start
   those buckets empty.

What a crash costs, precisely:

* Pages in flight at the dead node (at most its ``fetch.concurrency``) were
  never committed as done: they are queued again and fetched a second time by
  the new owner if the dead node had already fetched them. The count is the
  ``recovered_in_flight`` counter (an upper bound on pages fetched twice).
* Cross-URL batches the dead node had received but not acked are re-claimed by
  the new owners; batches it had not yet sent were never "done" either (a page
  completes only after its cross URLs are stored: the router's page barrier),
  so the pages are re-fetched and the links found again.
* With the state directory gone (another machine's disk lost): the dead node's
  queued URLs, its seen fingerprints and the robots/politeness state of its
  hosts are lost. URLs it had queued are not fetched unless discovered again
  by a link from a page fetched later; URLs it had fetched may be fetched
  again if rediscovered (its seen keys are gone); its WARC files are gone with
  its disk. Batches it had read and not acked are still recovered (they are in
  Redis). ``unrecoverable_buckets`` counts the buckets that started empty, unless the node never
  acked a delivery (:func:`holding_key`): then everything it had is still in the streams, nothing is
  lost, and ``restored_from_streams`` counts them.
  With a shared store, the checkpoints bound this: see :mod:`webgather.runtime.durability.checkpoint`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import os
from pathlib import Path
from typing import Any

from webgather.cluster.router import send_many
from webgather.cluster.transport import Coordinator, UrlTransport
from webgather.cluster.wire import encode_handoff
from webgather.clock import Clock, SystemClock
from webgather.config import CrawlConfig
from webgather.fetch.cookies import CrawlCookies
from webgather.errors import ClusterError
from webgather.frontier.bucket import BucketState
from webgather.frontier.frontier import Frontier
from webgather.recrawl.state import state_path
from webgather.recrawl.state import UrlState
from webgather.runtime.durability.restore import restore_from_store
from webgather.runtime.engine.host_settled import with_settled
from webgather.runtime.engine.parts import COOKIES_FILE
from webgather.runtime.engine.robots_store import RobotsStore
from webgather.urls import host_key

__all__ = ["NodeLock", "lock_held", "recover_node"]

LOCK_FILE = "node.lock"
SEND_CHUNK = 256


class NodeLock:
    """An exclusive ``flock`` on ``node_dir/node.lock`` (released by the OS when the process dies)."""

    def __init__(self, node_dir: Path) -> None:
        self.path = Path(node_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self, blocking: bool = False) -> bool:
        """Take the lock; False if another process (or open file) holds it and not ``blocking``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> NodeLock:
        if not self.acquire():
            raise ClusterError(f"another process runs this node ({self.path} is locked)")
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_held(node_dir: Path) -> bool:
    """True if a running process holds the node's lock (it is alive, however late its heartbeat)."""
    if not (Path(node_dir) / LOCK_FILE).exists():
        return False
    lock = NodeLock(node_dir)
    if lock.acquire():
        lock.release()
        return False
    return True


class _DeadState:
    """The dead node's frontier and re-crawl rows, used from one worker thread (SQLite wants one thread)."""

    def __init__(self, state_dir: Path, config: CrawlConfig, frontier_cls: type[Frontier]) -> None:
        self.frontier = frontier = frontier_cls.open(state_dir, config.frontier, config.politeness,
                                                     n_buckets=config.cluster.n_buckets,
                                                     max_pages_per_host=config.scope.max_pages_per_host)
        rows_path = state_path(state_dir.parent)
        self.robots_store = RobotsStore.open(state_dir)
        self.cookies: CrawlCookies | None = CrawlCookies(config.fetch.max_cookies_per_host,
                                                        config.fetch.max_cookie_bytes_per_host)
        self.cookies.load(state_dir / COOKIES_FILE.name)
        self.clock: Clock = SystemClock()
        self.rows = UrlState.open(rows_path, lambda url: frontier.bucket_for(host_key(url))) \
            if rows_path.exists() else None
        if self.rows is not None:
            self.rows.fill_buckets()

    def export(self, buckets: tuple[int, ...], dead: str) -> tuple[list[tuple[int, bytes, int]], int]:
        frontier = self.frontier
        found = {b for b in range(frontier.n_buckets)
                 if frontier.hosts_of_bucket.get(b) or len(frontier.seen.export_bucket(b))}
        # and what it holds beyond its buckets in the table: lost in a new table, not yet handed over
        buckets = tuple(sorted(set(buckets) | found | set(self.rows.buckets() if self.rows is not None else ())))
        out = []
        for seq, bucket in enumerate(buckets, 1):
            state = with_settled(self, frontier.export_bucket(bucket))
            rows = self.rows.export_rows(bucket) if self.rows is not None else []
            out.append((bucket, encode_handoff(dead, seq, state, rows), len(state.items)))
        return out, frontier.resumed_in_flight

    def drop_and_close(self, buckets: list[int]) -> None:
        try:
            for bucket in buckets:
                self.frontier.drop_bucket(bucket)
            if self.rows is not None:
                self.rows.drop_rows(buckets)
        finally:
            self.frontier.close()
            self.robots_store.close()
            if self.rows is not None:
                self.rows.close()


async def recover_node(dead: str, buckets: tuple[int, ...], *, nodes_dir: Path, config: CrawlConfig,
                       frontier_cls: type[Frontier], transport: UrlTransport,
                       coordinator: Coordinator) -> dict[str, Any]:
    """Re-send the dead node's buckets as hand-offs (module docstring); returns what was done.

    ``buckets`` empty: every bucket found in its state (finishing an earlier recovery)."""
    node_dir = nodes_dir / dead
    lock = NodeLock(node_dir)
    if node_dir.is_dir() and not lock.acquire():
        return {"node": dead, "skipped": "alive again"}
    try:
        if not (node_dir / "state").is_dir() and config.cluster.shared_store:
            return await restore_from_store(dead, buckets, store_url=config.cluster.shared_store,
                                            n_buckets=config.cluster.n_buckets, transport=transport,
                                            coordinator=coordinator)
        if not (node_dir / "state").is_dir():
            return await _start_empty(dead, buckets, config.cluster.n_buckets, transport, coordinator)
        return await _recover_from_disk(dead, buckets, node_dir / "state", config, frontier_cls, transport, coordinator)
    finally:
        lock.release()


def holding_key(node: str) -> str:
    """The crawl-wide counter a node raises before its first ack (``member.buckets``): until then every
    URL it holds is still in a stream, so its state directory going missing loses nothing."""
    return f"holds_state:{node}"


async def _start_empty(dead: str, buckets: tuple[int, ...], n_buckets: int, transport: UrlTransport,
                       coordinator: Coordinator) -> dict[str, Any]:
    """The dead node's state directory is gone and there is no shared store: its buckets start empty.
    Its unacked deliveries are claimed by the takers; what it had acked is lost, unless it never acked."""
    await send_many(transport, [(bucket, encode_handoff(dead, 0, BucketState(bucket, n_buckets))) for bucket in buckets])
    if not (await coordinator.counters()).get(holding_key(dead), 0):
        await coordinator.incr("restored_from_streams", len(buckets))
        return {"node": dead, "restored_from_streams": len(buckets)}
    await coordinator.incr("unrecoverable_buckets", len(buckets))
    return {"node": dead, "unrecoverable_buckets": len(buckets)}


async def _recover_from_disk(dead: str, buckets: tuple[int, ...], state_dir: Path, config: CrawlConfig,
                             frontier_cls: type[Frontier], transport: UrlTransport,
                             coordinator: Coordinator) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    sent: list[int] = []
    items = in_flight = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="wg-recover") as pool:
        state = await loop.run_in_executor(pool, _DeadState, state_dir, config, frontier_cls)
        try:
            payloads, in_flight = await loop.run_in_executor(pool, state.export, buckets, dead)
            for start in range(0, len(payloads), SEND_CHUNK):
                chunk = payloads[start:start + SEND_CHUNK]
                await send_many(transport, [(bucket, payload) for bucket, payload, _n in chunk])
                sent += [bucket for bucket, _p, _n in chunk]
                items += sum(n for _b, _p, n in chunk)
        finally:  # drop only what was sent: a bucket not sent stays for the next recovery
            await loop.run_in_executor(pool, state.drop_and_close, sent)
    for name, value in (("recovered_buckets", len(sent)), ("recovered_items", items),
                        ("recovered_in_flight", in_flight)):
        await coordinator.incr(name, value)
    return {"node": dead, "buckets": len(sent), "items": items, "in_flight": in_flight}
