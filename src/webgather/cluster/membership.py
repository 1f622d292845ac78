"""The coordinating duty: membership changes become bucket tables, and the crawl's end is detected.

Every node heartbeats (``Membership.heartbeat``, TTL ``member_ttl_s``) with an
info record (:data:`NodeInfo`: idle, applied table version, activity counter,
load figures) and tries to take the coordinator lease on every beat; the
holder runs :meth:`Coordinating.tick`. Any node can take over: the lease
expires with its holder, and all state the duty needs is in the backend
(table, members, counters), except how long a node has been missing, which
a new holder simply starts observing again.

One tick does at most one of these, in this order:

1. **No table yet**: CAS the initial table over the live nodes.
2. **Deaths**: a node that owns buckets and whose heartbeat has expired (its
   key's TTL is ``member_ttl_s``), for ``grace_s`` more as observed by this
   holder (a debounce; ``startup_grace_s`` for a node
   this holder has never seen alive: it may still be starting), and that is not
   known alive by other means (``alive_hint``: on one machine, its directory
   lock is held, so a node that stalls longer than the TTL is not torn apart), is dead. Its buckets are
   spread over the live nodes (``plan_leave``, one CAS for all dead nodes),
   then ``recover(dead, buckets)`` re-sends the dead node's state as hand-offs
   (see ``runtime.durability.recovery``), and ``requeue(dead, other buckets)`` sends
   again what the dead node had read and not acked in buckets it no longer owned
   (it handed them over, or read them just before a table change): their owners
   read those streams and would never be given entries pending for a dead reader
   (only the ``claim_idle_s`` sweep would take them), and the crawl's end waits
   for every stream to be empty. Deaths are acted on at once, even while
   other hand-offs are under way. Counters ``recover.wanted.<node>`` and
   ``recover.done.<node>`` let the next lease holder finish a recovery that
   its predecessor began and did not end.
   After a backend outage (``backend_returned``) every node gets
   ``startup_grace_s`` again: no heartbeat could be written meanwhile.
3. **Joins and graceful leaves** (a node with ``leaving`` in its info): only
   when every live node has applied the current table (its hand-offs done), so
   one transition ends before the next begins; then ``plan_membership``.
4. **Termination** (two-wave detection, no global "in transit" counter to get
   wrong when a node dies between a send and an increment): a wave bumps the
   ``probe`` counter, waits until every node has published info computed after
   reading that probe, and holds if all are idle with their table applied; then
   it checks that no bucket stream holds a payload (``scan_pending``). Two
   consecutive holding waves with unchanged per-node activity counters mean no
   node did anything between them, so the empty streams seen by the first scan
   stayed empty and nothing remains: ``done`` is raised to ``runs`` (the number
   of times seeds were submitted), and every node stops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from webgather.cluster.mapping import BucketTable, initial, plan_leave, plan_membership
from webgather.cluster.transport import Coordinator
from webgather.clock import Clock

__all__ = ["ALIVE", "Coordinating", "NodeInfo", "dead_nodes", "recoveries_due", "settled"]

NodeInfo = Mapping[str, Any]
Recover = Callable[[str, tuple[int, ...]], Awaitable[bool]]
"""Re-send a dead node's buckets; False if skipped (its state is locked: alive again, or being recovered)."""
ScanPending = Callable[[], Awaitable[int]]
Requeue = Callable[[str, Sequence[int]], Awaitable[int]]
"""Send again a dead node's unacked deliveries of the given buckets (``UrlTransport.requeue``)."""
ALIVE = "alive."
"""Counter ``alive.<run>.<node>``: raised by a node when it starts during run ``<run>`` (the
``runs`` counter), so a new lease holder knows which nodes ran since the crawl was last started."""
WANTED = "recover.wanted."
DONE = "recover.done."
REQUEUED = "requeued_deliveries"
"""Counter: deliveries dead nodes had read and not acked in buckets they no longer owned, sent again."""


def dead_nodes(table: BucketTable, members: Mapping[str, NodeInfo], missing_since: dict[str, float],
               now: float, grace_s: float, seen: set[str] | None = None, startup_grace_s: float = 0.0) -> list[str]:
    """Table nodes missing from ``members`` for at least ``grace_s`` (``startup_grace_s`` if not
    in ``seen``: never observed alive). Updates ``missing_since`` and ``seen``."""
    seen = set(table.nodes) if seen is None else seen
    seen |= set(members)
    for node in list(missing_since):
        if node in members or node not in table.nodes:
            del missing_since[node]
    dead = []
    for node in table.nodes:
        if node not in members:
            since = missing_since.setdefault(node, now)
            if now - since >= (grace_s if node in seen else max(grace_s, startup_grace_s)):
                dead.append(node)
    return dead


def recoveries_due(counters: Mapping[str, int]) -> list[str]:
    """Nodes whose recovery was begun and not finished."""
    return sorted(name[len(WANTED):] for name, n in counters.items()
                  if name.startswith(WANTED) and n > counters.get(DONE + name[len(WANTED):], 0))


def settled(members: Mapping[str, NodeInfo], version: int | None) -> set[str]:
    """Members whose info says they applied table ``version`` or a later one: every hand-off they
    owed for it is sent (``Ownership.applied``: nothing awaited, nothing leaving)."""
    if version is None:
        return set()
    return {node for node, info in members.items()
            if info.get("applied") and isinstance(info.get("version"), int) and info["version"] >= version}


def _all_applied(table: BucketTable, members: Mapping[str, NodeInfo]) -> bool:
    return all(info.get("version") == table.version and info.get("applied") for info in members.values())


class Coordinating:
    """The lease holder's duty (module docstring). One object per node; ``tick`` when holding the lease."""

    def __init__(self, coordinator: Coordinator, n_buckets: int, clock: Clock, *, grace_s: float,
                 recover: Recover, requeue: Requeue, scan_pending: ScanPending, startup_grace_s: float = 10.0,
                 alive_hint: Callable[[str], bool] | None = None) -> None:
        self.coordinator = coordinator
        self.n_buckets = n_buckets
        self.clock = clock
        self.grace_s = grace_s
        self.recover = recover
        self.requeue = requeue
        self.scan_pending = scan_pending
        self.missing_since: dict[str, float] = {}
        self.seen: set[str] = set()
        self.startup_grace_s = startup_grace_s
        self.alive_hint = alive_hint
        self.probe = 0
        self.snapshot: dict[str, int] | None = None
        self._checked_recoveries = False
        self.patient_until = -float("inf")
        self.events: list[tuple[float, str]] = []
        """(wall time, what) of every table change made here (for logs and benches)."""

    async def tick(self) -> None:
        """One round of the duty; returns after at most one table change."""
        coord = self.coordinator
        counters = await coord.counters()
        if counters.get("runs", 0) and counters.get("done", 0) >= counters["runs"]:
            return  # the crawl is over: nodes leaving now are not dying
        run_prefix = f"{ALIVE}{counters.get('runs', 0)}."
        self.seen |= {name[len(run_prefix):] for name in counters if name.startswith(run_prefix)}
        members = await coord.members()
        table = await coord.get_table()
        live = sorted(n for n, info in members.items() if not info.get("leaving"))
        if table is None:
            if live and await coord.cas_table(None, initial(live, self.n_buckets)):
                self._event(f"initial table over {', '.join(live)}")
            return
        if not self._checked_recoveries:
            await self._finish_recoveries()
        now = self.clock.monotonic()
        seen = self.seen if now >= self.patient_until else set()  # just after an outage: every node is "starting"
        dead = dead_nodes(table, members, self.missing_since, now, self.grace_s, seen, self.startup_grace_s)
        if self.alive_hint is not None:
            dead = [node for node in dead if not self.alive_hint(node)]
        if dead:
            await self._on_deaths(table, dead, live)
            return
        leaving = {n for n, info in members.items() if info.get("leaving")}
        # nodes merely missing stay until they are dead (step 2): only joins and announced leaves here
        target = sorted((set(table.nodes) - leaving) | set(live))
        if target and set(target) != set(table.nodes) and _all_applied(table, members):
            new = plan_membership(table, target)
            if new is not table and await coord.cas_table(table.version, new):
                self._event(f"table v{new.version} for nodes {', '.join(target)}")
                self.snapshot = None
            return
        await self._termination(table, members)

    def backend_returned(self, now: float) -> None:
        """The backend was unreachable and answers again. Heartbeats could not be written
        meanwhile (and a restarted Redis drops the expired ones), so no node counts as
        missing from before, and every node gets ``startup_grace_s`` to heartbeat again."""
        self.missing_since.clear()
        self.patient_until = now + self.startup_grace_s

    async def _on_deaths(self, table: BucketTable, dead: list[str], live: list[str]) -> None:
        if not live:
            return
        members = await self.coordinator.members()  # one that beat again since this tick read them is not dead
        dead = [node for node in dead if node not in members]
        if not dead:
            return
        new = table
        for node in dead:
            new = plan_leave(new, node)
        new = BucketTable(table.version + 1, table.n_buckets, new.owners)
        if not await self.coordinator.cas_table(table.version, new):
            return
        self.snapshot = None
        for node in dead:
            self._event(f"node {node} dead: its {len(table.buckets_of(node))} buckets reassigned (v{new.version})")
            await self.coordinator.incr(WANTED + node)
            owned = table.buckets_of(node)
            if await self.recover(node, owned):
                await self._requeue(node, owned)
            await self.coordinator.incr(DONE + node)
            self.missing_since.pop(node, None)

    async def _finish_recoveries(self) -> None:
        self._checked_recoveries = True
        counters = await self.coordinator.counters()
        for node in recoveries_due(counters):
            if await self.recover(node, ()):
                await self._requeue(node, ())
                await self.coordinator.incr(DONE + node, counters[WANTED + node] - counters.get(DONE + node, 0))

    async def _requeue(self, dead: str, owned: Sequence[int]) -> None:
        """The dead node's unacked deliveries outside ``owned`` (its buckets, whose takers claim them)
        go back to their streams for the buckets' owners."""
        mine = set(owned)
        moved = await self.requeue(dead, [b for b in range(self.n_buckets) if b not in mine])
        if moved:
            await self.coordinator.incr(REQUEUED, moved)
            self._event(f"node {dead}: {moved} unacked deliveries of buckets it no longer owned sent again")

    async def _termination(self, table: BucketTable, members: Mapping[str, NodeInfo]) -> None:
        coord = self.coordinator
        if self.probe == 0 or any(int(info.get("probe", 0)) < self.probe for info in members.values()):
            if self.probe == 0:
                self.probe = await coord.incr("probe")
            return
        holding = (set(table.nodes) <= set(members) and _all_applied(table, members)
                   and all(info.get("idle") for info in members.values()))
        snap = {node: int(info.get("activity", 0)) for node, info in members.items()}
        if holding:
            holding = await self.scan_pending() == 0
        if holding and snap == self.snapshot:
            counters = await coord.counters()
            runs, done = counters.get("runs", 0), counters.get("done", 0)
            if runs > done:
                await coord.incr("done", runs - done)
                self._event("crawl finished: every node idle, no batch pending")
            return
        self.snapshot = snap if holding else None
        self.probe = await coord.incr("probe")

    def _event(self, what: str) -> None:
        self.events.append((self.clock.wall(), what))
