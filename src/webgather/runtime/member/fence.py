"""Fencing: a cluster node starts no request once its membership lease may have lapsed.

A node is a member while its heartbeat key lives (``member_ttl_s``). A node that
stalls (SIGSTOP, a swapped-out VM, a long GC) past that is declared dead by the
coordinator and its buckets go to others; when it wakes it must not fetch from
hosts it no longer owns. Two rules, both checked right before every request
(pages and robots.txt alike) by :class:`FencedHttp`, which wraps the node's HTTP
client so the run loop (``runtime.engine.node``) is untouched apart from handling
:class:`~webgather.errors.Fenced`:

* **Lease** (:class:`Lease`, pure): a request may start only while
  ``now < renewed_at + member_ttl_s - lease_margin_s`` on the node's own
  monotonic clock, where ``renewed_at`` is taken *before* the heartbeat was sent
  (the key cannot expire earlier than that plus its TTL) and counts only once a
  bucket table read sent *after* that heartbeat succeeded has been adopted: so
  the table the node fetches under is never older than its lease. The
  coordinator declares a node dead only ``heartbeat_s + lease_margin_s`` after
  its key expired (``Coordinating`` ``grace_s``), so a node stops at least
  ``2 * lease_margin_s + heartbeat_s`` before anyone may take its buckets. After a
  thaw the first beat finds the lease lapsed; fetches wait (they were dispatched
  before the freeze, or wake from a slot or a politeness sleep) until a heartbeat
  and a table read after it have succeeded, and the new table's lost buckets are
  held for hand-off by then.
* **Ownership**: the host's bucket must be one the node owns and serves
  (``Ownership.is_ready``) at send time; otherwise the request is not sent and
  ``Fenced`` is raised: the run loop puts the item back in its queue unfetched
  (it travels with the bucket's hand-off); a robots.txt fetch is asked again by whoever gets the host.

* **Server's time** (:class:`ServerCheck`, on Redis): both rules above read the
  node's own clock, and a clock that runs slow (libfaketime at half speed) or
  stops while real time goes on (a suspended VM) keeps a lapsed lease "valid":
  measured, 13-16 requests after a thaw to hosts another node owned. So before a
  request starts, the node also asks Redis (one script: ``PTTL`` of its member
  key and the table's version): the key must live at least ``lease_margin_s``
  more *in the server's time* and the table must be the one adopted. The ask is
  sent after the request began waiting (one ask serves every request waiting
  when it is sent: under load a handful of requests share one round trip).
  An answer used more than ``lease_margin_s + heartbeat_s`` after its ask was
  sent (by the node's clock, judged when each waiting request resumes: a
  freeze between the server's answer and its use, a loop stalled that long)
  is stale: the request asks again.
  A key that lives but a newer table: requests wait until the node adopted it
  (its next beat), then ask again. A key gone or about to go: the lease counts
  as lapsed, and requests wait for a heartbeat sent after that and a table
  read after it, as after a thaw. Redis unreachable is a
  refusal too: a node that cannot learn whether it is still a member does not
  fetch.

A node merely too busy to beat (its loop's turns slow under load) keeps its lease through
:func:`keeping_alive`'s thread (:mod:`webgather.cluster.keepalive`), which a frozen process does not run.

A request already on the wire when the node froze cannot be recalled: at most
``fetch.concurrency`` of them, counted by nobody but the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from webgather.config.sections import ClusterConfig
from webgather.errors import ClusterError, Fenced
from webgather.fetch.model import FetchResult
from webgather.clock import Clock
from webgather.runtime.engine.parts import HttpPort, NodeParts
from webgather.urls import host_key

if TYPE_CHECKING:
    from webgather.cluster.keepalive import KeepAlive

__all__ = ["HELD", "LAPSED", "NEWER_TABLE", "STALE", "FencedHttp", "Lease", "ServerCheck", "fenced_parts", "keeping_alive",
           "server_check"]

log = logging.getLogger(__name__)

RECHECK_S = 0.05
"""A waiting request looks at the lease this often (besides being woken when it is renewed)."""


class Lease:
    """The node's own view of its membership lease (module docstring). Pure: every method takes ``now``."""

    def __init__(self, lease_s: float, margin_s: float) -> None:
        self.lease_s = lease_s
        self.margin_s = margin_s
        self.renewed_at = -math.inf
        """Send time of the last heartbeat that succeeded (not yet confirmed by a table read)."""
        self.confirmed_at = -math.inf
        """Send time of the last heartbeat followed by a successful table read: the lease counts from here."""
        self.beat_at = -math.inf
        """Send time of the loop's last successful heartbeat (the keep-alive thread stops if it gets old)."""

    def renewed(self, sent_at: float) -> None:
        """A heartbeat sent at ``sent_at`` (monotonic, taken before sending) succeeded."""
        self.renewed_at = max(self.renewed_at, sent_at)
        self.beat_at = max(self.beat_at, sent_at)

    def kept(self, sent_at: float) -> None:
        """The keep-alive thread's renewal sent at ``sent_at`` succeeded and its table read (in the same
        pipeline, after it) matched the adopted table: renewed and confirmed at once (``cluster.keepalive``)."""
        self.renewed_at = max(self.renewed_at, sent_at)
        self.confirmed_at = max(self.confirmed_at, sent_at)

    def mark(self) -> float:
        """Before a table read is sent: the renewal that read may confirm."""
        return self.renewed_at

    def table_read(self, mark: float) -> None:
        """The table read that was sent after :meth:`mark` returned ``mark`` succeeded (and was adopted)."""
        self.confirmed_at = max(self.confirmed_at, mark)

    def expires_at(self) -> float:
        return self.confirmed_at + self.lease_s - self.margin_s

    def valid(self, now: float) -> bool:
        """May a request start at ``now``?"""
        return now < self.expires_at()

    def lapse(self) -> None:
        """The server says the lease is gone: only a heartbeat sent from now on (then a table read) renews it."""
        self.renewed_at = self.confirmed_at = -math.inf


Probe = Callable[[], Awaitable[tuple[int, "int | None"]]]
"""The member key's remaining life in the server's time (ms) and the table's version (``lease_check``)."""
HELD, NEWER_TABLE, LAPSED, STALE = "held", "newer table", "lapsed", "stale"
""":meth:`ServerCheck.confirm`'s verdicts."""


class ServerCheck:
    """Asks the backend whether the lease holds in the server's time (module docstring)."""

    def __init__(self, probe: Probe, adopted: Callable[[], int | None], margin_s: float,
                 monotonic: Callable[[], float], fresh_s: float) -> None:
        self.probe, self.adopted, self.margin_ms = probe, adopted, margin_s * 1000
        self.monotonic, self.fresh_s = monotonic, fresh_s
        """An answer used later than ``fresh_s`` after its ask was sent is :data:`STALE`."""
        self.asks = 0
        self._next: asyncio.Future[tuple[str, float]] | None = None
        """The answer (verdict, send time) of the ask not sent yet (every request that waits from now on
        shares it)."""
        self._task: asyncio.Task[None] | None = None

    async def confirm(self) -> str:
        """What an ask sent after this call began says: :data:`HELD`, :data:`NEWER_TABLE` (the key lives,
        the table is not the adopted one yet), :data:`LAPSED` (the key is gone or about to go, no table,
        or the backend did not answer) or :data:`STALE` (the answer came too late to judge by: ask again)."""
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
            if self._task is None or self._task.done():
                self._task = asyncio.create_task(self._asking())
        verdict, sent = await asyncio.shield(self._next)
        # judged here, as late as can be (the request goes out from here without another wait of this
        # module): a freeze between the answer and this caller's turn makes it stale too
        return STALE if verdict == HELD and self.monotonic() - sent > self.fresh_s else verdict

    async def _asking(self) -> None:
        while self._next is not None:
            answer, self._next = self._next, None
            sent = self.monotonic()
            try:
                answer.set_result((self._verdict(*await self.probe()), sent))
            except ClusterError:  # unreachable, or its data lost: not known to hold
                answer.set_result((LAPSED, sent))
            except Exception as exc:  # noqa: BLE001 - an error from the client itself: not known to hold either
                log.warning("lease check failed: %s: %s; no request starts until the lease is renewed",
                            type(exc).__name__, exc)
                answer.set_result((LAPSED, sent))  # this task ending here would leave the next ask unanswered
            except BaseException:
                answer.cancel()
                if self._next is not None:  # asked while this ask was out: nobody would answer it
                    self._next.cancel()
                    self._next = None
                raise
            self.asks += 1

    def _verdict(self, ttl_ms: int, version: int | None) -> str:
        adopted = self.adopted()
        if ttl_ms <= self.margin_ms or version is None:
            return LAPSED
        if adopted is None or version > adopted:
            return NEWER_TABLE
        return HELD if version == adopted else LAPSED


class FencedHttp:
    """The node's HTTP client behind the lease and ownership checks (module docstring)."""

    def __init__(self, http: HttpPort, lease: Lease, clock: Clock, owns: Callable[[str], bool], node: str,
                 server: ServerCheck | None = None) -> None:
        self.http = http
        self.server = server
        """Asked before every request once the local lease holds (None: a backend without one)."""
        self.lease = lease
        self.clock = clock
        self.owns = owns
        """``owns(host)``: is the host's bucket this node's to fetch now?"""
        self.node = node
        self.counts = {"lease_waits": 0, "fenced": 0, "server_refused": 0, "table_waits": 0, "server_stale": 0}
        self._renewed = asyncio.Event()
        self._lapsed = False

    def table_read(self, mark: float) -> None:
        """A table read sent after ``lease.mark()`` returned ``mark`` succeeded and was adopted."""
        self.lease.table_read(mark)
        self._renewed.set()  # waiting requests look again

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        await self.admit(host_key(url))
        if headers is None:
            return await self.http.fetch(url)
        return await self.http.fetch(url, headers=headers)

    async def admit(self, host: str) -> None:
        """Return when a request to ``host`` may start; raise :class:`Fenced` if the host is not ours."""
        while True:
            if not self.lease.valid(self.clock.monotonic()):
                self.counts["lease_waits"] += 1
                await self._wait_lease()
            verdict = HELD if self.server is None else await self.server.confirm()
            if verdict == HELD:
                break
            if verdict == STALE:
                self.counts["server_stale"] += 1
            elif verdict == NEWER_TABLE:  # adopted at the node's next beat (table_read wakes us)
                self.counts["table_waits"] += 1
                await self._next_table_read()
            else:
                self.counts["server_refused"] += 1  # the node's clock said yes, the server's time no
                self.lease.lapse()
        if not self.owns(host):
            self.counts["fenced"] += 1
            raise Fenced(f"node {self.node} no longer owns {host}: request not sent")

    async def _next_table_read(self) -> None:
        self._renewed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.lease.margin_s):
                await self._renewed.wait()

    async def _wait_lease(self) -> None:
        if not self._lapsed:
            self._lapsed = True
            log.warning("node %s: membership lease lapsed; no request starts until it is renewed", self.node)
        while not self.lease.valid(self.clock.monotonic()):
            self._renewed.clear()
            try:
                async with asyncio.timeout(RECHECK_S):
                    await self._renewed.wait()
            except TimeoutError:
                pass
        if self._lapsed:
            self._lapsed = False
            log.warning("node %s: membership lease renewed; requests resume", self.node)


@contextlib.contextmanager
def keeping_alive(transport: object, node: str, cluster: ClusterConfig, lease: Lease, http: FencedHttp,
                  adopted: Callable[[], int | None]) -> Iterator[KeepAlive | None]:
    """While the block runs (on the event loop), a node on Redis has the lease's keep-alive thread
    (:mod:`webgather.cluster.keepalive`); other backends answer without waiting for a turn of the
    loop and need none. ``transport``: the node's; a ``RedisTransport`` has its ``RedisBackend``."""
    backend = getattr(transport, "backend", None)  # duck-typed: a one-node crawl does not import redis-py
    url, crawl = getattr(backend, "url", None), getattr(backend, "crawl", None)
    if not (isinstance(url, str) and url and isinstance(crawl, str)):
        yield None
        return
    from webgather.cluster.keepalive import KeepAlive, redis_renewer  # redis-py: not for a one-node crawl

    loop = asyncio.get_running_loop()
    renew, close = redis_renewer(url, crawl, node, cluster.member_ttl_s)

    def kept(sent_at: float) -> None:
        lease.kept(sent_at)  # at once: a fetch looking at the lease needs no turn of the loop
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(http.table_read, sent_at)  # wakes the requests waiting for it

    keepalive = KeepAlive(renew, period_s=cluster.heartbeat_s, adopted=adopted, loop_beat_at=lambda: lease.beat_at,
                          kept=kept, monotonic=http.clock.monotonic, close=close)
    keepalive.start()
    try:
        yield keepalive
    finally:
        keepalive.stop()
        http.counts["keepalive_renewals"] = keepalive.renewals  # the summary's "fence" figures
        if http.server is not None:
            http.counts["server_asks"] = http.server.asks


def server_check(coordinator: object, node: str, adopted: Callable[[], int | None], cluster: ClusterConfig,
                 clock: Clock) -> ServerCheck | None:
    """The :class:`ServerCheck` of a coordinator that answers ``lease_check`` (Redis); None for one whose
    nodes share one process and clock (the in-process hub)."""
    check = getattr(coordinator, "lease_check", None)
    if check is None:
        return None
    return ServerCheck(lambda: check(node), adopted, cluster.lease_margin_s, clock.monotonic,
                       cluster.lease_margin_s + cluster.heartbeat_s)


def fenced_parts(parts: NodeParts, lease: Lease, is_ready: Callable[[int], bool],
                 server: ServerCheck | None = None) -> tuple[NodeParts, FencedHttp]:
    """``parts`` whose HTTP client is fenced by ``lease``, ``is_ready(bucket)`` (the node's ownership)
    and ``server``."""
    frontier = parts.frontier

    def owns(host: str) -> bool:
        bucket = frontier.bucket_of_host.get(host)
        return is_ready(frontier.bucket_for(host) if bucket is None else bucket)

    http = FencedHttp(parts.http, lease, parts.clock, owns, parts.node_id, server)
    return dataclasses.replace(parts, http=http), http
