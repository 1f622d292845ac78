"""The bucket side of a cluster node: the receive loop, hand-offs out and in.

Receive loop: ``transport.receive(ready and awaiting buckets)`` -> decode ->
for each delivery what :meth:`Ownership.classify` says: apply (a URL batch
goes to the node's ``add_local``; a hand-off for a bucket already here is
merged with ``import_bucket``), hold (behind an awaited hand-off), release
(import the awaited hand-off, then apply what was held), or forward (the
bucket left this node while the payload was on its way: send it again, the
new owner reads it behind the hand-off). Then ``frontier.flush()`` (durable)
and only then ``ack``: an acked batch is on disk. Batches delivered long ago
and never acked (their reader died) are re-claimed every ``claim_idle_s``.

Hand-off out (:meth:`BucketKeeper.handoff_loop`), for the buckets the node
lost in a new table: every host of those buckets is held (deferred to
``inf``: the dispatcher takes none, a completion keeps it held); the loop waits
until none has a request or a robots.txt fetch in flight, then, with the
receive loop paused, exports each bucket (``Frontier.export_bucket``; the
clocks of held hosts become the full politeness delay, counted from the
export, or the host's own later time), sends it on the bucket's stream and
drops it. Send before drop: a crash in between re-sends from disk (merged
harmlessly) rather than losing the bucket. A bucket that a later table gives
back while its hand-off waits (for quiet, or for the WARCs to ship to a full
store) is neither sent nor dropped: its hosts are released and it stays here.

Re-crawl rows (``rows``, a :class:`~webgather.runtime.cycle.cluster.RowStore`)
travel in the same hand-off message: exported with the bucket, dropped with
it after the send, merged by the receiver (per URL the newest record wins),
so a row and its queued revisit always sit at the same node.

Hand-off in: a released bucket claims the dead previous owner's unacked
deliveries first (``claim_stale`` with no idle time), imports the state, then
applies claimed and held deliveries in that order, the hand-offs among them
before the URL batches (a batch applied first would queue again the pages whose
seen keys the hand-off brings). Imported hosts with queued items come up for
dispatch once their handed-over wait has passed. A sender that leaves the members
while a bucket awaits it has its unacked deliveries of the bucket claimed at the next
beat (:meth:`BucketKeeper.claim_from_gone`): its own hand-off may be among them (read
back by a receive it began before it lost the bucket, and never passed on), and releases
the bucket; at ``handoff_timeout_s`` the bucket's never-read entries are looked at too,
so a bucket starts empty only when its state is nowhere in its stream. A bucket lost while still
awaited is passed on with what it held and a relay (an empty hand-off naming the node it awaited): its
new owner awaits that node's hand-off instead. A dead node's restore of a bucket it never held (an
*unheld* hand-off) acts as a relay to the bucket's owner before it, when this node knows that owner.
A restarted node's stored state of a bucket it does not
own (a merge hand-off, possibly stale) releases an awaited bucket only when it is the expected sender's;
otherwise it is held and merged after the bucket's state.

Robots rules and cookies move with the bucket: the exported state carries its
hosts' settled robots state (with the seconds it stays fresh) and cookies
(:mod:`webgather.runtime.engine.host_settled`); the new owner keeps them before
it adopts the hosts, so it asks robots.txt again only where no rule was handed
over or the rule's TTL has passed, and sends the hosts' cookies. The old owner
drops the hosts' host-only cookies once the state is sent.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

from webgather.cluster.handoff import Action, Ownership, Transition, releases
from webgather.cluster.router import Router, send_many, send_retrying
from webgather.cluster.transport import Delivery, UrlTransport
from webgather.cluster.wire import Handoff, Message, UrlBatch, decode, encode_handoff
from webgather.errors import BackendUnavailable, ClusterError, HandoffAbandoned
from webgather.frontier.bucket import BucketState, HostClock
from webgather.recrawl.observe import UrlRecord
from webgather.runtime.engine.host_settled import forget_settled, install_settled, with_settled
from webgather.runtime.engine.node import CrawlNode
from webgather.runtime.engine.parts import NodeParts
from webgather.urls import host_key

__all__ = ["BucketKeeper", "RowPort", "bucket_hosts", "import_state", "stored_buckets"]

log = logging.getLogger(__name__)

MAX_BATCHES = 256
CLAIM_BATCH = 1000
ACK_CONCURRENCY = 64
QUIET_POLL_S = 0.01


class RowPort(Protocol):
    """Where a node keeps the re-crawl rows of its buckets (``runtime.cycle.cluster.RowStore``)."""

    def export(self, bucket: int) -> list[UrlRecord]: ...

    def merge(self, rows: Sequence[UrlRecord]) -> int: ...

    def drop(self, buckets: Iterable[int], rows: Iterable[UrlRecord] = ()) -> None: ...


def bucket_hosts(parts: NodeParts, bucket: int) -> set[str]:
    return set(parts.frontier.hosts_of_bucket.get(bucket, ()))


def stored_buckets(parts: NodeParts) -> list[int]:
    """Buckets of which the frontier holds anything (hosts or seen keys). An empty seen-set (every
    fresh ``--workers`` node) is not asked for its 4096 buckets: that cost 0.2-0.3 s of each node's start."""
    frontier = parts.frontier
    hosts = {b for b, held in frontier.hosts_of_bucket.items() if held}
    if len(frontier.seen) == 0:
        return sorted(hosts)
    return [b for b in range(frontier.n_buckets) if b in hosts or len(frontier.seen.export_bucket(b))]


def import_state(parts: NodeParts, crawl: CrawlNode, state: BucketState, rows: Sequence[UrlRecord] = (),
                 store: RowPort | None = None) -> int:
    """Import a handed-over bucket with its hosts' settled robots state and cookies; hosts with queued
    items come up after their wait (and fetch robots.txt then if no fresh rule came with them)."""
    if rows and store is not None:
        store.merge(rows)  # before the items: a queued revisit finds its record
    count = parts.frontier.import_bucket(state)
    install_settled(parts, state)  # before the hosts are adopted: their first URL finds the rules
    waits = {c.host: c.wait_s if math.isfinite(c.wait_s) else 0.0 for c in state.hosts}
    first_url: dict[str, str] = {}
    for item in state.items:
        first_url.setdefault(host_key(item.url), item.url)
    crawl.adopt_hosts((h, u, waits.get(h, 0.0)) for h, u in first_url.items())
    return count


class BucketKeeper:
    """Receive loop and hand-offs of one cluster node (module docstring)."""

    def __init__(self, parts: NodeParts, crawl: CrawlNode, ownership: Ownership, transport: UrlTransport,
                 router: Router, *, claim_idle_s: float, receive_block_s: float, rows: RowPort | None = None,
                 report: Callable[[BackendUnavailable], None] | None = None,
                 prepare: Callable[[Sequence[Delivery]], Awaitable[None]] | None = None,
                 before_send: Callable[[Sequence[int]], Awaitable[None]] | None = None,
                 before_first_ack: Callable[[], Awaitable[None]] | None = None) -> None:
        self.parts = parts
        self.crawl = crawl
        self.ownership = ownership
        self.transport = transport
        self.router = router
        self.node = ownership.node
        self.claim_idle_s = claim_idle_s
        self.receive_block_s = receive_block_s
        self.lock = asyncio.Lock()
        self.alive: set[str] = set()
        self.counts: Counter[str] = Counter()
        self.busy = False
        self.seq = 0
        self._saved: dict[str, float] = {}
        self._leaving = asyncio.Event()
        self.report: Callable[[BackendUnavailable], None] = report or self._log_unavailable
        """Told of each backend failure of the receive loop (the node logs one line per outage)."""
        self.prepare = prepare
        """Awaited before deliveries are applied (``--partition-by ip``: learn their hosts' keys)."""
        self.closed = False
        """Set at shutdown: the loops end (a cancellation can be lost inside the Redis client)."""
        self.rows = rows
        """The node's re-crawl rows, moved with its buckets (None: none kept)."""
        self.before_send = before_send
        """Awaited before exported bucket states are sent (a shared store: ship the WARCs of their pages)."""
        self.before_first_ack = before_first_ack
        """Awaited once, before this node's first ack: from then on its disk may hold URLs that are in no
        stream (``durability.recovery`` tells a dead node that never acked from one whose state is lost)."""
        self.log: list[tuple[float, str, int]] = []
        """(wall time, "ready"|"lost", bucket): when buckets became ready here or left (tests check fetches)."""

    def members_alive(self, nodes: Iterable[str]) -> None:
        """The members the node's last beat found alive (a hand-off from a dead sender is not waited for)."""
        self.alive = set(nodes)

    # -- receiving --------------------------------------------------------------------
    async def receive_loop(self) -> None:
        clock = self.parts.clock
        last_claim = clock.monotonic()
        while not self.closed:
            buckets = self.ownership.reading()
            if not buckets:
                await asyncio.sleep(self.receive_block_s)
                continue
            try:
                got = await self.transport.receive(buckets, MAX_BATCHES, self.receive_block_s)
                if clock.monotonic() - last_claim >= self.claim_idle_s / 2:
                    last_claim = clock.monotonic()
                    got += await self.transport.claim_stale(buckets, self.claim_idle_s)
                if got:
                    await self.process(got)
            except BackendUnavailable as exc:
                self.report(exc)
                await asyncio.sleep(1.0)

    def _log_unavailable(self, exc: BackendUnavailable) -> None:
        log.warning("webgather node %s: %s; retrying", self.node, exc)

    async def process(self, deliveries: Sequence[Delivery]) -> None:
        """Apply, hold, release or forward each delivery; flush; ack what was done.

        The acks go out after the lock is released (what they ack is applied and on
        disk already), so a hand-off or a table change need not wait for them."""
        self.busy = True
        try:
            if self.prepare is not None:
                await self.prepare(deliveries)
            acks: dict[int, list[str]] = defaultdict(list)
            async with self.lock:
                for delivery in deliveries:
                    for done in await self._one(delivery):
                        acks[done.bucket].append(done.delivery_id)
                if acks:
                    self.parts.frontier.flush()
            await self._ack(acks)
        finally:
            self.busy = False

    async def _one(self, delivery: Delivery) -> list[Delivery]:
        self.counts["deliveries"] += 1
        message = self._decode(delivery)
        if message is None:
            return [delivery]
        sender = message.sender if isinstance(message, Handoff) else None
        merge = isinstance(message, Handoff) and message.merge
        relay = message.relay if isinstance(message, Handoff) else ""
        unheld = isinstance(message, Handoff) and message.unheld
        target = self.ownership.redirect(delivery.bucket, sender, relay, unheld) if sender is not None else None
        action = self.ownership.classify(delivery, sender, self.alive, merge, relay, unheld)
        if action is Action.RELAY:
            self.counts["relays_in"] += 1
            self.ownership.relayed(delivery.bucket, target or relay, self.parts.clock.monotonic())
            found = self._held_handoff(delivery.bucket)  # the relayed node's hand-off may be held already
            return [delivery, *await self._release(delivery.bucket, *found)] if found is not None else [delivery]
        if action is Action.APPLY:
            self._apply(message)
            return [delivery]
        if action is Action.RELEASE:
            return await self._release(delivery.bucket, delivery, message)
        if action is Action.FORWARD:
            self.counts["forwarded"] += 1
            await send_retrying(self.transport, delivery.bucket, delivery.payload)
            return [delivery]
        self.counts["held"] += 1
        return []

    def _decode(self, delivery: Delivery) -> Message | None:
        try:
            return decode(delivery.payload)
        except ClusterError as exc:
            self.counts["bad_payloads"] += 1
            log.error("webgather node %s: dropped a bad payload in bucket %d: %s", self.node, delivery.bucket,
                      exc)
            return None

    def _apply(self, message: Message) -> None:
        if isinstance(message, UrlBatch):
            self.counts["batches"] += 1
            self.crawl.add_local(list(message.items), self.parts.clock.monotonic())
        else:
            self.counts["handoffs_merged"] += 1
            self._import(message)

    async def _release(self, bucket: int, delivery: Delivery | None, message: Message | None) -> list[Delivery]:
        waiting = self.ownership.awaiting[bucket]
        claimed: list[Delivery] = []
        if waiting.expected is not None and waiting.expected not in self.alive and not waiting.claimed:
            claimed = (await self._claim([bucket])).get(bucket, [])
        if isinstance(message, Handoff):
            self.counts["handoffs_in"] += 1
            self._import(message)
        held = self.ownership.release(bucket)
        if bucket in self.ownership.leaving:
            self._leaving.set()  # lost again while awaited: hand it on
        else:
            self.log.append((self.parts.clock.wall(), "ready", bucket))
        done = [delivery] if delivery is not None else []
        seen = {d.delivery_id for d in done}
        extras: list[tuple[Delivery, Message | None]] = []
        for extra in [*claimed, *held]:
            if extra.delivery_id not in seen:
                seen.add(extra.delivery_id)
                extras.append((extra, self._decode(extra)))
        # states first: their seen keys must filter the URL batches held with them (else a page one of
        # them had fetched is queued again by a link that came earlier in the stream)
        for extra, decoded in sorted(extras, key=lambda pair: not isinstance(pair[1], Handoff)):
            if decoded is not None:
                self._apply(decoded)
            done.append(extra)
        return done

    def _import(self, message: Handoff) -> None:
        self.counts["rows_in"] += len(message.rows)
        import_state(self.parts, self.crawl, message.state, message.rows, self.rows)

    async def _claim(self, buckets: list[int]) -> dict[int, list[Delivery]]:
        """Every unacked delivery of ``buckets`` (their reader is dead), by bucket, in stream order."""
        out: dict[int, list[Delivery]] = defaultdict(list)
        while True:
            got = await self.transport.claim_stale(buckets, 0.0, CLAIM_BATCH)
            if self.prepare is not None:
                await self.prepare(got)
            fresh = [d for d in got if d.delivery_id not in {x.delivery_id for x in out[d.bucket]}]
            for delivery in fresh:
                out[delivery.bucket].append(delivery)
            self.counts["claimed"] += len(fresh)
            if len(got) < CLAIM_BATCH or not fresh:
                return out

    async def _claim_from_dead(self, gained: tuple[int, ...]) -> None:
        """Gained buckets whose previous owner is dead: take its unacked deliveries now (one call)."""
        async with self.lock:
            acks = await self._settle_gone(gained)
        await self._ack(acks)

    async def claim_from_gone(self) -> None:
        """At each beat: awaited buckets whose expected sender left the members since it was last seen
        (:meth:`Ownership.unclaimed_gone`): take its unacked deliveries; its hand-off among them releases."""
        buckets = self.ownership.unclaimed_gone(self.alive)
        if buckets:
            async with self.lock:
                acks = await self._settle_gone(buckets)
            await self._ack(acks)

    async def _settle_gone(self, buckets: Iterable[int], read_new: bool = False) -> dict[int, list[str]]:
        """Claim the unacked deliveries of the awaited ``buckets`` whose expected sender is not alive (the
        lock held): they lead what each bucket holds (``read_new``: and those never delivered yet, read
        now, not left to the receive loop). The awaited hand-off may be among them: a sender reads its own
        hand-offs back when a receive it began before it lost the bucket is woken by their sends, and a node
        that then leaves (or dies) before it passed them on leaves them pending under its name. Such a
        hand-off releases its bucket now, as if it had just come; returns the acks of what was done."""
        acks: dict[int, list[str]] = defaultdict(list)
        wanted = [b for b in buckets if b in self.ownership.awaiting
                  and self.ownership.awaiting[b].expected not in self.alive]
        if not wanted:
            return acks
        claimed = await self._claim(wanted)
        while read_new:
            fresh = await self.transport.receive(wanted, MAX_BATCHES, 0)
            if self.prepare is not None:
                await self.prepare(fresh)
            for delivery in fresh:
                claimed[delivery.bucket].append(delivery)
            read_new = len(fresh) >= MAX_BATCHES
        self.ownership.reclaimed(wanted, claimed)
        for bucket in wanted:
            found = self._held_handoff(bucket)
            if found is not None:
                for done in await self._release(bucket, *found):
                    acks[done.bucket].append(done.delivery_id)
        return acks

    def _held_handoff(self, bucket: int) -> tuple[Delivery, Handoff] | None:
        """The first held delivery of awaited ``bucket`` that is a hand-off releasing it, taken out of held.
        Relays from the expected sender among them re-target the bucket first (they stay held: acked with
        the rest, applied as the empty states they are)."""
        waiting = self.ownership.awaiting[bucket]
        handoffs: list[tuple[int, Delivery, Handoff]] = []
        for k, delivery in enumerate(waiting.held):
            try:
                message = decode(delivery.payload)
            except ClusterError:
                continue  # counted and logged once, when it is applied with the rest
            if isinstance(message, Handoff):
                handoffs.append((k, delivery, message))
        for _k, _delivery, message in handoffs:
            target = self.ownership.redirect(bucket, message.sender, message.relay, message.unheld)
            if target is not None:
                self.ownership.relayed(bucket, target, self.parts.clock.monotonic())
        for k, delivery, message in handoffs:
            if not message.relay and releases(waiting, message.sender, self.alive, message.merge, message.unheld):
                del waiting.held[k]
                return delivery, message
        return None

    async def _ack(self, acks: dict[int, list[str]]) -> None:
        """Flush the frontier (what is acked must be on disk), then ack."""
        if not acks:
            return
        if self.before_first_ack is not None:
            await self.before_first_ack()
            self.before_first_ack = None
        self.parts.frontier.flush()
        pending = list(acks.items())
        for start in range(0, len(pending), ACK_CONCURRENCY):  # one round trip per bucket: overlap them
            await asyncio.gather(*(self.transport.ack(b, ids) for b, ids in pending[start:start + ACK_CONCURRENCY]))

    async def release_overdue(self, buckets: Iterable[int]) -> None:
        """Awaited buckets whose dead owner's state never came: start them empty (``handoff_timeouts``),
        unless the hand-off is in the bucket's stream, unacked or never delivered (:meth:`_settle_gone`):
        then it releases the bucket."""
        buckets = list(buckets)
        async with self.lock:
            acks = await self._settle_gone(buckets, read_new=True)
            for bucket in buckets:
                if bucket in self.ownership.awaiting:
                    self.counts["handoff_timeouts"] += 1
                    for done in await self._release(bucket, None, None):
                        acks[done.bucket].append(done.delivery_id)
            await self._ack(acks)

    # -- table changes -----------------------------------------------------------------
    async def on_transition(self, transition: Transition) -> None:
        """React to an adopted table: hand lost buckets over (in the background)."""
        for bucket in transition.lost_awaiting:
            await self._give_up_awaiting(bucket)
        self.counts["gained"] += len(transition.gained)
        await self._claim_from_dead(transition.gained)
        if transition.lost:
            self._leaving.set()

    async def _give_up_awaiting(self, bucket: int) -> None:
        """Lost before its hand-off came: pass on what was held, then an empty hand-off that names the
        node whose hand-off the new owner is to await (a relay; a plain empty hand-off if none was
        expected)."""
        async with self.lock:
            waiting = self.ownership.take_awaiting(bucket)
            for delivery in waiting.held:  # in order: one bucket's stream
                await send_retrying(self.transport, bucket, delivery.payload)
            await self._ack({bucket: [d.delivery_id for d in waiting.held]} if waiting.held else {})
            state = BucketState(bucket, self.parts.frontier.n_buckets)
            await self._send_states([state], relay=waiting.expected or "")

    def close(self) -> None:
        self.closed = True
        self._leaving.set()

    async def handoff_loop(self) -> None:
        while not self.closed:
            await self._leaving.wait()
            self._leaving.clear()
            while self.ownership.leaving and not self.closed:
                try:
                    await self.hand_over(sorted(self.ownership.leaving))
                except HandoffAbandoned as exc:  # the node is stopping (it said why): nothing was sent or dropped
                    log.warning("%s", exc)
                    return

    async def hand_over(self, buckets: list[int], merge: bool = False) -> None:
        """Hold, wait for quiet, export, send and drop ``buckets`` (``merge``: orphans at start)."""
        while True:
            hosts = self._hold(buckets)
            if not self._busy(hosts):
                async with self.lock:
                    hosts = self._hold(buckets)
                    if not self._busy(hosts):
                        await self._export_send_drop(buckets, hosts, merge)
                        return
            await asyncio.sleep(QUIET_POLL_S)

    def _hold(self, buckets: list[int]) -> set[str]:
        frontier = self.parts.frontier
        hosts: set[str] = set()
        for bucket in buckets:
            hosts |= bucket_hosts(self.parts, bucket)
        for host in hosts:
            st = frontier.policy.known(host)
            if st is not None and math.isfinite(st.next_allowed_at):
                self._saved[host] = max(self._saved.get(host, 0.0), st.next_allowed_at)
            frontier.defer_host(host, math.inf)
            frontier.parked.release_host(host, frontier.last_now)  # queued, so exported, not waited for
        return hosts

    def _busy(self, hosts: set[str]) -> bool:
        in_flight = set(self.parts.frontier.in_flight_items.values())
        return bool(hosts & in_flight) or bool(hosts & self.crawl.robots_busy)

    async def _export_send_drop(self, buckets: list[int], hosts: set[str], merge: bool) -> None:
        if self.before_send is not None:  # ships the WARCs of the held hosts' pages, done before this
            await self.before_send(buckets)  # may wait long (a full store): a table meanwhile may give some back
        frontier, now, exported_at = self.parts.frontier, self.parts.clock.monotonic(), self.parts.clock.wall()
        kept = self._won_back(buckets, merge)
        states = [with_settled(self.parts, self._fixed_clocks(frontier.export_bucket(b), now))
                  for b in buckets if b not in kept]
        rows = [self.rows.export(s.bucket) if self.rows is not None else [] for s in states]
        kept_hosts = self._keep(kept, now, adopt=False)
        self.crawl.forget_hosts(hosts - kept_hosts)
        if states:  # all sent before any is dropped: a crash re-sends, never loses
            await self._send_states(states, rows, merge)
        kept = self._won_back([s.bucket for s in states], merge)  # during the send: its copy comes back, merged
        for state, bucket_rows in zip(states, rows, strict=True):
            if state.bucket in kept:
                continue
            if state.items or state.hosts or len(state.seen_keys):
                frontier.drop_bucket(state.bucket)
            if bucket_rows and self.rows is not None:
                self.rows.drop([state.bucket], bucket_rows)
            if not merge:
                self.ownership.handed_over(state.bucket)
                self.log.append((exported_at, "lost", state.bucket))
        kept_hosts |= self._keep(kept, now, adopt=True)
        for host in hosts:
            self._saved.pop(host, None)
        forget_settled(self.parts, hosts - kept_hosts)
        frontier.flush()

    def _won_back(self, buckets: Sequence[int], merge: bool) -> set[int]:
        """Buckets that a table adopted while their hand-off waited gave back to this node (no longer
        leaving): their state stays here. Sent and dropped, the node that owns them would lose their seen
        keys until its own hand-off came back round the stream, and the URL batches applied meanwhile would
        queue again the pages it had fetched (nemesis file seed 103: a hand-off held up by a full store)."""
        return set() if merge else {b for b in buckets if b not in self.ownership.leaving}

    def _keep(self, buckets: set[int], now: float, *, adopt: bool) -> set[str]:
        """Release the held hosts of won-back ``buckets`` (their clocks as an export would hand them over;
        ``adopt``: their robots state was forgotten, adopt them again); returns those hosts."""
        frontier, kept, adopted = self.parts.frontier, set(), []
        for bucket in sorted(buckets):
            for clock in self._fixed_clocks(frontier.export_bucket(bucket), now).hosts:
                frontier.defer_host(clock.host, now + clock.wait_s)
            for host in sorted(bucket_hosts(self.parts, bucket)):
                kept.add(host)
                queued = frontier.queues.items(host, 1)
                if adopt and queued:
                    adopted.append((host, queued[0].url, 0.0))
        if adopted:
            self.crawl.adopt_hosts(adopted)
        return kept

    def _fixed_clocks(self, state: BucketState, now: float) -> BucketState:
        policy = self.parts.frontier.policy
        clocks = []
        for clock in state.hosts:
            st = policy.known(clock.host)
            delay = policy.delay_s(st, None) + (policy.backoff_s(st.errors) if st is not None and st.errors else 0.0) \
                if st is not None else 0.0
            wait = max(delay, self._saved.get(clock.host, -math.inf) - now)
            clocks.append(HostClock(clock.host, wait, clock.crawl_delay_s, clock.errors, clock.ip, clock.accepted))
        return BucketState(state.bucket, state.n_buckets, state.items, state.seen_keys, tuple(clocks))

    async def _send_states(self, states: list[BucketState], rows: Sequence[Sequence[UrlRecord]] = (),
                           merge: bool = False, relay: str = "") -> None:
        messages = []
        for k, state in enumerate(states):
            self.seq += 1
            bucket_rows = rows[k] if rows else ()
            messages.append((state.bucket, encode_handoff(self.node, self.seq, state, bucket_rows, merge, relay)))
            self.counts["handoff_items"] += len(state.items)
            self.counts["settled_out"] += len(state.settled)
            self.counts["rows_out"] += len(bucket_rows)
        await send_many(self.transport, messages)
        self.counts["handoffs_out"] += len(messages)
        self.counts["handoff_bytes"] += sum(len(payload) for _b, payload in messages)

    def idle(self) -> bool:
        return not self.busy and self.ownership.applied()
