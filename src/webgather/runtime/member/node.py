"""One node of a cluster crawl: the one-node crawler plus router, bucket keeper, heartbeats, coordination.

Composition (one ``TaskGroup``): :class:`~webgather.runtime.engine.node.CrawlNode`
(``linger``: it waits for work instead of ending when its frontier is empty;
its links go through the :class:`~webgather.cluster.router.Router`, and a page
completes only after its cross URLs are sent), the router's flusher, the
:class:`~webgather.runtime.member.buckets.BucketKeeper` (receive loop and
hand-off loop), the beat loop and the lease loop.

Beat loop, every ``heartbeat_s`` (``IDLE_BEAT_S`` while idle): read the counters
(the crawl is over when ``done >= runs``), the members (who is alive) and the table; adopt a newer
table (:class:`~webgather.cluster.handoff.Ownership`); start buckets whose dead
previous owner's state never came; then publish this node's info with its
heartbeat (idle, activity, adopted version, load figures). Lease loop: take or
renew the coordinator lease and, while holding it, run
:class:`~webgather.cluster.membership.Coordinating`.

Start: the table is read *before* the first heartbeat (see ``handoff``);
buckets this node's state holds but does not own (it was away and its buckets
were given to others) are handed to their owners as merges, then the node
heartbeats and crawls.

In a re-crawl cycle (``cycle``, :mod:`~webgather.runtime.cycle.cluster`) the
node plans its owned buckets' revisits after that hand-over, crawls with the
cycle's hooks, and draws its fetches from the crawl-wide budget
(:mod:`~webgather.runtime.member.budget`; asked again at every beat, before
the heartbeat says whether the node is idle). Its re-crawl rows (:class:`RowStore`)
move with its buckets either way. Ends: ``done`` (every node stops), :meth:`leave`
(SIGTERM: say ``leaving``, hand every bucket over, then leave the membership),
:meth:`stop` (SIGINT: stop now, keep the state; after ``member_ttl_s`` the
others treat the node as dead and recover its buckets from its state).

Backend outages (:mod:`webgather.cluster.outage`): every loop retries while the
backend is unreachable (a page waits at its barrier until its cross URLs are
stored); the node logs one line when the backend goes away and one when it is
back. The watch loop enforces the limit whatever the hung calls do: an outage
counts from the backend's last answer, and ``max_outage_s`` after it the node
stops as on SIGINT, keeping its state; so it does for a shared store that took
no write for that long (:mod:`webgather.store.watched`), and at once for a Redis
that lost the crawl's data. ``failure`` says why (a
:class:`~webgather.errors.CannotContinue`: exit 6; ``run_cluster_node`` raises
it, after writing the summary).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from webgather.cachepolicy import make_cache
from webgather.cluster.handoff import Ownership, Transition
from webgather.cluster.mapping import BucketTable
from webgather.cluster.membership import ALIVE, Coordinating, settled
from webgather.cluster.outage import Outage
from webgather.cluster.patience import within_outage
from webgather.cluster.router import AddLocal, Router
from webgather.cluster.transport import Backend, UrlTransport
from webgather.errors import BackendUnavailable, CannotContinue, HandoffAbandoned, StoreError, WriteFailed
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.recrawl.state import state_path
from webgather.runtime.partition.addresses import SharedAddresses, learn_retrying
from webgather.runtime.member.buckets import BucketKeeper, stored_buckets
from webgather.runtime.cycle.cluster import NodeCycle, RowStore
from webgather.runtime.member.fence import keeping_alive
from webgather.runtime.member.page_gate import PageGate
from webgather.runtime.member.figures import node_info, node_summary
from webgather.runtime.member.last_table import load_table, save_table, table_path
from webgather.runtime.member.nudge import Nudge
from webgather.runtime.durability.checkpoint import Checkpointer, HeldAcks
from webgather.runtime.durability.losses import Losses, release_overdue
from webgather.runtime.durability.recovery import holding_key, lock_held, recover_node
from webgather.runtime.durability.restore import restore_awaited
from webgather.runtime.engine.node import CrawlNode
from webgather.runtime.engine.parts import NodeParts
from webgather.store.shared import SharedStore
from webgather.store.watched import WatchedStore
from webgather.urls import host_key

__all__ = ["ClusterNode"]
log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 5.0
BUDGET_POLL_S = 0.05
"""How often a node with a cycle budget looks whether its grant runs low (a local check)."""
IDLE_BEAT_S = 0.1
"""Beat and coordinate this often while idle (``heartbeat_s`` while crawling)."""
STARTUP_GRACE_S = 10.0
"""A node in the table never seen alive gets this long to start before it counts as dead."""
WATCH_S = 0.25
"""The watch loop looks at the outages this often (it makes no call that could hang)."""
ANSWERED = "answered"
"""Coordinator counter: raised by each node run at the beat after its first answer (a response, whatever its
status), so a node that got none of its own knows whether the crawl did (exit 5 judges the crawl)."""


def _router(parts: NodeParts, transport: UrlTransport, ownership: Ownership, addresses: SharedAddresses | None,
            add_local: AddLocal) -> Router:
    cluster = parts.config.cluster
    cache = make_cache(cluster.sent_cache_policy, cluster.sent_cache_entries) if cluster.sent_cache_entries else None
    return Router(parts.node_id, transport, parts.clock, n_buckets=cluster.n_buckets,
                  add_local=add_local, is_local=ownership.is_ready,
                  partition_key=addresses.key if addresses else None, batch_urls=cluster.batch_urls,
                  batch_wait_s=cluster.batch_wait_s, cache=cache,
                  learn=partial(learn_retrying, addresses) if addresses else None)


def _bucket_of_url(frontier: Frontier, url: str) -> int:
    return frontier.bucket_for(host_key(url))


class ClusterNode:
    """A crawl node in a cluster (module docstring). ``await run()`` returns its summary figures.

    Built complete here: its page gate (:class:`~webgather.runtime.member.page_gate.PageGate`:
    lease, ownership and page limits), router, crawl, bucket keeper, coordinating role and, with
    ``store`` (the crawl's shared store), its :attr:`checkpoints`, whose held acks the keeper
    acks through from the start."""

    crawl_answered = 0
    """The crawl's ``ANSWERED`` counter at the last beat (0: no node has had an answer)."""
    _answer_counted = False
    """This run raised ``ANSWERED``."""

    def __init__(self, parts: NodeParts, backend: Backend, *, nodes_dir: Path, frontier_cls: type[Frontier] = Frontier,
                 addresses: SharedAddresses | None = None, cycle: NodeCycle | None = None,
                 store: SharedStore | None = None) -> None:
        cluster = parts.config.cluster
        self.node_id, self.cfg, self.cycle, self.addresses = parts.node_id, cluster, cycle, addresses
        self.ownership = Ownership(parts.node_id)
        self.coordinator = backend.coordinator()
        self.gate = PageGate(parts, self.coordinator, self.ownership, cycle, wake=self._wake)
        self.parts = parts = self.gate.parts  # with the fenced HTTP client: what it crawls with
        self.losses = Losses(parts.node_id)
        self.transport = backend.transport(self.node_id)
        self.router = _router(parts, self.transport, self.ownership, addresses, self._add_local)
        self.crawl = CrawlNode(parts, router=self.router.route, linger=True,
                               after_route=self.router.wait_routed, hooks=cycle.hooks if cycle else None,
                               page_permit=self.gate.permit if self.gate.limited else None)
        self._watching()
        self.rows = cycle.rows if cycle else RowStore(state_path(parts.out_dir), partial(_bucket_of_url, parts.frontier))
        self.acks = HeldAcks(self.transport) if store is not None else None
        """The keeper's acks, held for the next checkpoint (None: acked at once, no shared store)."""
        self.keeper = BucketKeeper(
            parts, self.crawl, self.ownership, self.transport if self.acks is None else self.acks, self.router,
            claim_idle_s=cluster.claim_idle_s, receive_block_s=min(0.2, cluster.heartbeat_s), rows=self.rows,
            report=self._backend_failed, prepare=addresses.prepare if addresses is not None else None,
            before_send=self._ship_before_handoff if store is not None else None,
            before_first_ack=self._mark_holding if store is None else None)
        self.coordinating = self._coordinating(nodes_dir, frontier_cls)
        self.write_failure: WriteFailed | None = None  # the write that stopped it (disk full): the caller raises it
        self.adoptions: list[tuple[float, int]] = []
        self.recoveries: list[dict[str, Any]] = []
        self.reason = ""
        self._leaving = self._closing = self._lease_held = False
        self._end = asyncio.Event()
        self._nudge_beat, self._nudge_tick = Nudge(), Nudge()  # the crawl's end without sleeps (nudge module)
        self._published_probe = -1
        self.checkpoints = None if store is None or self.acks is None else Checkpointer(
            self, self.watched(store), self.acks)
        """The checkpoint loop (``--shared-store``); the caller runs it beside :meth:`run`."""

    def _coordinating(self, nodes_dir: Path, frontier_cls: type[Frontier]) -> Coordinating:
        """The coordinator's role (run while this node holds the lease), recovering dead nodes from ``nodes_dir``."""
        cluster, parts = self.cfg, self.parts
        recover = partial(recover_node, nodes_dir=nodes_dir, config=parts.config, frontier_cls=frontier_cls,
                          transport=self.transport, coordinator=self.coordinator)
        return Coordinating(self.coordinator, cluster.n_buckets, parts.clock,
                            grace_s=cluster.heartbeat_s + cluster.lease_margin_s,
                            recover=self._recovering(recover), requeue=self.transport.requeue,
                            scan_pending=self._scan_pending,
                            startup_grace_s=max(STARTUP_GRACE_S, 3 * cluster.member_ttl_s),
                            alive_hint=lambda node: lock_held(nodes_dir / node))

    def _watching(self) -> None:
        """The backend's and the shared store's outages (:mod:`webgather.cluster.outage`), counted from now."""
        now, cfg = self.parts.clock.monotonic(), self.cfg
        self.outage = Outage(self.node_id, cfg.max_outage_s, now=now)
        self.store_outage = Outage(self.node_id, cfg.max_outage_s, "shared store", now=now, from_last_answer=False)
        self.quiet_s = max(cfg.member_ttl_s, 3 * cfg.heartbeat_s)
        """Neither the beat nor the lease loop got an answer this long: the backend is taken as away (a
        black-holed link hangs, it does not fail)."""
        self.failure: CannotContinue | None = None
        """Set when the node gave up on its backend or store (``run`` returns, the caller raises it)."""

    def _add_local(self, items: list[CrawlItem], now: float) -> list[CrawlItem]:
        """The router's local URLs go to the crawl's seen-test and queue."""
        return self.crawl.add_local(items, now)

    def _wake(self) -> None:
        """Permits or a budget grant came: the dispatcher may be waiting for them."""
        self.crawl.wake()

    async def _mark_holding(self) -> None:
        """Before the first ack (no shared store): from now on this node's disk holds URLs no stream has."""
        await self.coordinator.incr(holding_key(self.node_id))

    async def _ship_before_handoff(self, buckets: Sequence[int]) -> None:
        """Before a hand-off's states are sent: the pages they count as done are in the shared store."""
        if self.checkpoints is None:
            return
        try:
            await self.checkpoints.ship_retrying(buckets)
        except CannotContinue as exc:  # the store stayed unusable past max_outage_s: stop, state kept
            self.give_up(exc, "shared store unusable")
            raise HandoffAbandoned(str(exc)) from None
        except StoreError as exc:  # closed while the store was down: the node is stopping anyway
            raise HandoffAbandoned(f"node {self.node_id}: closed while its WARC files waited for the store: {exc}") from None

    # -- control ------------------------------------------------------------------------
    @property
    def leaving(self) -> bool:
        """Told to leave (:meth:`leave`): handing its buckets over, then stopping."""
        return self._leaving

    def leave(self) -> None:
        """Graceful leave: hand every bucket over, then stop (SIGTERM)."""
        self._leaving = True

    def stop(self, reason: str = "stopped") -> None:
        """Stop now, keeping the state on disk (SIGINT)."""
        if not self._end.is_set():
            self.reason = reason
            self._end.set()

    def idle(self) -> bool:
        """Nothing to do, or nothing running and no fetch to be had (:meth:`PageGate.idle`)."""
        return self.router.idle() and self.keeper.idle() and self.gate.idle(self.crawl)

    def activity(self) -> int:
        stats, counts = self.parts.stats, self.keeper.counts
        return (stats.attempts + stats.robots_fetches + stats.urls_new + counts["deliveries"]
                + counts["handoffs_out"] + self.router.stats.messages + self.gate.activity())

    async def _budget_loop(self) -> None:
        while not self._closing:
            try:
                await self.gate.tick(self.crawl)
            except BackendUnavailable as exc:
                self._backend_failed(exc)  # one line per outage; the beat loop decides when to give up
                await asyncio.sleep(self.cfg.heartbeat_s)
            await asyncio.sleep(BUDGET_POLL_S)

    # -- run ------------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        started = time.process_time(), self.parts.clock.monotonic()
        await within_outage(self._start, node=self.node_id, max_outage_s=self.cfg.max_outage_s)
        await within_outage(self._enter, node=self.node_id, max_outage_s=self.cfg.max_outage_s)
        with keeping_alive(self.transport, self.node_id, self.cfg, self.gate.lease, self.gate.http,
                           lambda: self.ownership.version):
            await self._run_loops()
        if self.reason in ("done", "left"):
            try:
                await self.coordinator.leave(self.node_id)
            except BackendUnavailable as exc:
                log.warning(f"webgather node {self.node_id}: could not leave the membership: {exc}")
        summary = node_summary(self, time.process_time() - started[0], self.parts.clock.monotonic() - started[1])
        return {**summary, "crawl_answered": self.crawl_answered}

    async def _enter(self) -> None:
        """Count this node alive in this run, beat, read the table (the lease counts from here: the first
        fetches need not wait a beat). Run again, as a whole, after an outage (within_outage)."""
        runs = (await self.coordinator.counters()).get("runs", 0)
        await self.coordinator.incr(f"{ALIVE}{runs}.{self.node_id}")
        await self._beat()
        await self._read_table()

    async def _run_loops(self) -> None:
        async with asyncio.TaskGroup() as group:
            crawling = group.create_task(self._crawl())
            loops = [group.create_task(loop) for loop in (
                self.router.run(), self.keeper.receive_loop(), self.keeper.handoff_loop(),
                self._beat_loop(), self._lease_loop(), self._budget_loop(), self._watch_loop())]
            await self._end.wait()
            self.crawl.stop()
            await crawling
            await self._flush_router()
            await self.gate.give_back(self.crawl)
            self._closing = True
            self.router.close()
            self.keeper.close()
            for task in loops:
                task.cancel()

    async def _crawl(self) -> None:
        try:
            await self.crawl.run()
        except WriteFailed as exc:  # its items stay in flight in the frontier: fetched again on resume
            self.write_failure = exc
            self.stop("write failed")

    async def _start(self) -> None:
        """Adopt the table, hand over what is stored here and not owned, plan the cycle's revisits."""
        table = await self.coordinator.get_table()
        if table is not None:
            await self._adopt(table, load_table(table_path(self.parts.out_dir)))
        orphans: list[int] = []
        if len(self.ownership.ready) < self.cfg.n_buckets:  # a one-node crawl owns them all: no scan
            stored = set(stored_buckets(self.parts)) | set(self.rows.buckets())
            orphans = sorted(b for b in stored if not self.ownership.is_ready(b))
        if orphans:
            await self.keeper.hand_over(orphans, merge=True)
        if self.cycle is not None:
            table = self.ownership.table
            self.cycle.begin(table, set(self.ownership.ready))
            if table is not None:
                self.gate.share(len(table.nodes))

    async def _flush_router(self) -> None:
        """Send what is buffered, if the backend answers soon. Dropping it is safe: every buffered
        URL belongs to a page that has not completed (the page barrier) and is fetched again."""
        try:
            async with asyncio.timeout(FLUSH_TIMEOUT_S):
                await self.router.flush()
        except TimeoutError:
            log.warning(f"webgather node {self.node_id}: backend unavailable, unsent cross URLs dropped "
                        "(their pages were not completed and will be fetched again)")

    async def _beat_wait(self, nudge: Nudge) -> None:
        """``heartbeat_s``, cut short once the node is idle (looked at every ``IDLE_BEAT_S``, or at
        once when ``nudge``d): the crawl may be ending, its end takes two waves of beats and ticks,
        and a node waiting out a whole beat after its last page held the end of a 2-worker crawl
        back by up to 0.5 s."""
        waited = 0.0
        while waited < self.cfg.heartbeat_s and not self._closing:
            step = min(IDLE_BEAT_S, self.cfg.heartbeat_s - waited)
            await nudge.wait(step)
            waited += step
            if self.idle():
                return

    async def _beat_loop(self) -> None:
        while not self._closing:
            await self._beat_wait(self._nudge_beat)
            try:
                await self._beat()
            except BackendUnavailable as exc:
                self._backend_failed(exc)
                self._enforce()
            except CannotContinue as exc:  # Redis lost the crawl's data
                self.give_up(exc, "backend lost its data")
            else:
                self._backend_answered()

    async def _lease_loop(self) -> None:
        while not self._closing:
            try:
                self._lease_held = await self.coordinator.try_lease(self.node_id, self.cfg.member_ttl_s)
                self._backend_answered()  # a beat held up by other work (the keeper's lock) is not silence
                if self._lease_held:
                    await self._tick()
            except BackendUnavailable as exc:
                self._backend_failed(exc)
            except CannotContinue as exc:
                self.give_up(exc, "backend lost its data")
            await self._beat_wait(self._nudge_tick)

    async def _tick(self) -> None:
        """One coordinator tick; if it moved the crawl's end along (a probe, ``done``), beat at once."""
        coordinating = self.coordinating
        before = coordinating.probe, len(coordinating.events)
        await coordinating.tick()
        if (coordinating.probe, len(coordinating.events)) != before and self.idle():
            self._nudge_beat.set()

    async def _watch_loop(self) -> None:
        while not self._closing:
            await asyncio.sleep(WATCH_S)
            if (line := self.outage.silent(self.parts.clock.monotonic(), self.quiet_s)) is not None:
                log.warning(line)
            self._enforce()

    def _enforce(self) -> None:
        """Stop, keeping the state, once the backend or the store has been away past ``max_outage_s``."""
        now = self.parts.clock.monotonic()
        for outage, reason in ((self.outage, "backend unavailable"), (self.store_outage, "shared store unusable")):
            if outage.exceeded(now):
                self.give_up(CannotContinue(outage.error_text()), reason)

    def give_up(self, exc: CannotContinue, reason: str) -> None:
        """Stop as on SIGINT (state kept); ``exc`` is what the command says (exit 6)."""
        if self.failure is None:
            self.failure = exc
            self.stop(reason)

    def watched(self, store: SharedStore) -> WatchedStore:
        """``store`` with its failures counted as the node's store outage (:mod:`webgather.store.watched`)."""
        clock, outage = self.parts.clock, self.store_outage

        def failed(reason: str) -> None:
            if (line := outage.failed(clock.monotonic(), reason)) is not None:
                log.warning(line)

        def wrote() -> None:
            if (line := outage.succeeded(clock.monotonic())) is not None:
                log.warning(line)

        return WatchedStore(store, failed=failed, wrote=wrote,
                            gave_up=lambda: outage.error_text() if self.failure is not None and outage.down else None)

    def _backend_failed(self, exc: BackendUnavailable) -> None:
        """Every loop reports here; one line per outage (the loops keep retrying)."""
        line = self.outage.failed(self.parts.clock.monotonic(), str(exc))
        if line is not None:
            log.warning(line)

    def _backend_answered(self) -> None:
        now = self.parts.clock.monotonic()
        line = self.outage.succeeded(now)
        if line is not None:
            log.warning(line)
            self.coordinating.backend_returned(now)

    async def _beat(self) -> None:
        coord = self.coordinator
        counters = await coord.counters()
        runs, done = counters.get("runs", 0), counters.get("done", 0)
        if runs and done >= runs:
            self.stop("done")
        if (line := self.losses.seen(counters)) is not None:
            log.error(line)
        await self._count_answers(counters)
        members = await coord.members()
        self.keeper.members_alive(members)
        await self._read_table()
        await self.keeper.claim_from_gone()  # a sender that left may have left its hand-off pending: take it
        await self._recover_awaited(members)
        self._check_leave(members)
        await self.gate.beat(self.crawl)  # before the info: "idle" must reflect permits and budget
        sent_at = self.parts.clock.monotonic()
        await coord.heartbeat(self.node_id, node_info(self, counters), self.cfg.member_ttl_s)
        self.gate.renewed(sent_at)
        if counters.get("probe", 0) != self._published_probe:  # the coordinator's next tick can go on now
            self._published_probe = counters.get("probe", 0)
            if self.idle():
                self._nudge_tick.set()
        if self._lease_held:  # renew here too: a long tick (a recovery) must not lose the lease
            self._lease_held = await coord.try_lease(self.node_id, self.cfg.member_ttl_s)

    async def _recover_awaited(self, members: dict[str, dict[str, Any]]) -> None:
        """Buckets awaited from a node that is gone or will never send them. With a shared store their
        state is restored from its checkpoints and streams: never started empty, however late (after a
        Redis outage longer than ``handoff_timeout_s`` every awaited bucket is late at the first beat,
        before the sender has been seen gone for ``grace_s``). Without one, a dead sender's buckets are
        started empty once ``handoff_timeout_s`` late, and counted as a loss."""
        now, coord = self.parts.clock.monotonic(), self.coordinator
        if not self.cfg.shared_store:
            overdue = self.ownership.overdue(now, self.cfg.handoff_timeout_s, self.keeper.alive)
            if overdue:
                await release_overdue(self.keeper, coord, overdue)
            return
        silent = self.ownership.silent(now, self.cfg.handoff_timeout_s, settled(members, self.ownership.version))
        self.recoveries += await restore_awaited(
            self.ownership, self.keeper.alive - silent, now, self.coordinating.grace_s,
            store_url=self.cfg.shared_store,
            n_buckets=self.cfg.n_buckets, transport=self.transport, coordinator=coord)

    async def _count_answers(self, counters: dict[str, int]) -> None:
        """Raise ``ANSWERED`` once this run has an answer; keep the crawl's figure (before the heartbeat
        says idle: the crawl ends only after every node's count is in)."""
        self.crawl_answered = max(self.crawl_answered, counters.get(ANSWERED, 0))
        if not self._answer_counted and self.parts.stats.status:
            self.crawl_answered = await self.coordinator.incr(ANSWERED)
            self._answer_counted = True

    async def _read_table(self) -> None:
        """Adopt a newer table; the read confirms the lease renewal sent before it (member.fence)."""
        mark = self.gate.mark()
        table = await self.coordinator.get_table()
        if table is not None and (self.ownership.version is None or table.version > self.ownership.version):
            await self._adopt(table)
        self.gate.table_read(mark)

    async def _adopt(self, table: Any, stored: BucketTable | None = None) -> None:
        """Adopt ``table``; ``stored``: the last table adopted before this start (first table only)."""
        async with self.keeper.lock:
            first = self.ownership.table is None
            transition = self.ownership.adopt(table, self.parts.clock.monotonic())
            if first and stored is not None:
                gained = self.ownership.resumed(stored, self.parts.clock.monotonic())
                if gained:
                    log.info(f"webgather node {self.node_id}: {len(gained)} buckets were given to it while it "
                             f"was away (table v{stored.version} -> v{table.version}): awaited from their owners")
                    transition = Transition(gained=tuple(gained))
            wall = self.parts.clock.wall()
            self.adoptions.append((wall, table.version))
            if first:
                self.keeper.log.extend((wall, "ready", b) for b in sorted(self.ownership.ready))
        save_table(table_path(self.parts.out_dir), table)
        await self.keeper.on_transition(transition)

    def _check_leave(self, members: dict[str, dict[str, Any]]) -> None:
        if not self._leaving:
            return
        others = [n for n, info in members.items() if n != self.node_id and not info.get("leaving")]
        table = self.ownership.table
        owns = table is not None and self.node_id in table.owners
        if not others:
            self.stop("stopped: last node")
        elif not owns and self.keeper.idle() and self.crawl.idle():  # idle: no delivery read and not yet passed on
            self.stop("left")

    def _recovering(self, recover: Any) -> Any:
        async def run(dead: str, buckets: tuple[int, ...]) -> bool:
            if self.addresses is not None:  # the dead node's frontier files its hosts by their keys
                await self.addresses.refresh()
            outcome = await recover(dead, buckets)
            self.recoveries.append(outcome)
            return "skipped" not in outcome
        return run

    async def _scan_pending(self) -> int:
        return await self.transport.pending_total(range(self.cfg.n_buckets))
