"""Which buckets a node reads, holds back, or hands over: the bucket side of a table change. Pure.

A node's buckets are in one of three states:

* **ready**: the node owns the bucket and has its state (queued items, seen
  keys, host clocks); its URLs go straight to the local seen-test and its
  stream's batches are applied as they come.
* **awaiting**: the node has just gained the bucket and waits for the
  previous owner's hand-off (:class:`~webgather.cluster.wire.Handoff`) on the
  bucket's stream. Batches read before it are *held* (neither seen-tested nor
  acked): they were sent before the old owner stopped, and the seen keys that
  decide whether they are new are not here yet. The hand-off that releases the
  bucket comes from the owner in the node's previous table (``expected``), or
  from a node that is no longer alive while the expected one is not alive either (a dead
  node's state is re-sent by the coordinator under the dead node's id; a bucket awaited from a node that died
  before handing it over is re-sent by the awaiting node itself, from the
  dead node's checkpoint: :meth:`Ownership.gone`). After the import, held deliveries are
  applied in stream order and acked.
* **leaving**: the node lost the bucket in the new table but still has its
  state: it stops dispatching the bucket's hosts, waits for the fetches in
  flight, exports the state and sends it on the bucket's stream, then drops it.

:meth:`Ownership.adopt` applies a new table and says what to do; what
:meth:`Ownership.classify` returns tells the receive loop what to do with one
delivery. The node reports ``applied`` (no bucket awaiting or leaving) in its
heartbeat, and the coordinator changes the table for a join or a leave only
when every node has applied the current one, so hand-offs never chain.

The first table a node adopts is read *before* its first heartbeat: if it
already owns buckets there (table version 0, or a node restarted under its id
before anyone noticed it had gone) it has their state and they are ready; a
joining node owns nothing in it and gains its share in a later table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from webgather.cluster.mapping import BucketTable
from webgather.cluster.transport import Delivery
from webgather.errors import ClusterError

__all__ = ["Action", "Awaiting", "Ownership", "Transition", "releases"]


class Action(Enum):
    APPLY = "apply"
    """The node has the bucket's state: apply the payload now."""
    HOLD = "hold"
    """Keep it until the bucket's hand-off arrives."""
    RELEASE = "release"
    """This is the awaited hand-off: import it, then apply what was held."""
    FORWARD = "forward"
    """The bucket is no longer here: send the payload again (to its new owner), ack this."""
    RELAY = "relay"
    """The expected sender lost the bucket before its own awaited hand-off came: await the node it
    awaited instead (:meth:`Ownership.relayed`), ack this."""


@dataclass(slots=True)
class Awaiting:
    expected: str | None
    """The previous owner, whose hand-off releases the bucket (None: any hand-off)."""
    since: float
    held: list[Delivery] = field(default_factory=list)
    claimed: bool = False
    """The dead previous owner's unacked deliveries were re-claimed (they lead ``held``)."""
    gone_since: float | None = None
    """When ``expected`` was first seen missing from the members (None: alive, or not seen missing)."""
    restored: bool = False
    """Its state was re-sent from ``expected``'s checkpoint (:meth:`Ownership.restored`)."""
    earlier: str | None = None
    """The bucket's owner before ``expected``, in the tables this node adopted (None: not known here):
    whom ``expected`` itself awaited, if it had gained the bucket and not released it yet."""


def releases(waiting: Awaiting, sender: str, alive: set[str], merge: bool = False, unheld: bool = False) -> bool:
    """A hand-off from ``sender`` releases the bucket awaited as ``waiting``: it is the expected sender's,
    or a node's that is no longer alive (a dead node's state re-sent under its id). A ``merge`` hand-off
    (what a restarted node found stored for a bucket it does not own) releases only from the expected
    sender: from any other node it is older than the state the expected sender holds (the bucket moved
    on while that node was away), and imported first it would queue again the pages fetched since, whose
    seen keys come later; held, it is merged after the bucket's state, only its new URLs queued.
    A dead node's re-sent state releases only while the expected sender is not alive either: an
    expected sender that lives holds the bucket's newer state and sends it (or relays, or is judged
    silent); released on the dead node's older checkpoint first, the bucket fetched again the pages
    the expected sender had fetched since (nemesis s3 seed 1084: n0 and n2 both declared dead, n1
    restored n2's buckets and fetched, then handed them to the returning n0, which the coordinator's
    re-send of n2's state released first). An *unheld* restore is no state at all: from the expected
    sender it stands for the state that sender never had (when this node knows no owner before it,
    :meth:`Ownership.redirect`); from another node it releases nothing (nemesis file seed 25: the unheld
    restore of a dead n2, which had redirected the bucket to the dead n1, then released it empty)."""
    if waiting.expected is None or sender == waiting.expected:
        return True
    return not merge and not unheld and sender not in alive and waiting.expected not in alive


@dataclass(frozen=True, slots=True)
class Transition:
    gained: tuple[int, ...] = ()
    lost: tuple[int, ...] = ()
    """Ready buckets to export and hand over."""
    lost_awaiting: tuple[int, ...] = ()
    """Buckets lost before their hand-off arrived: forward what was held."""


class Ownership:
    """The bucket states of one node (module docstring)."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.table: BucketTable | None = None
        self.owned_before: dict[int, str] = {}
        """Per bucket, its owner before its owner in ``table`` (in the tables adopted here; a table that
        left the bucket with the same owner changes nothing): whom an expected sender awaited."""
        self.ready: set[int] = set()
        self.awaiting: dict[int, Awaiting] = {}
        self.leaving: set[int] = set()

    @property
    def version(self) -> int | None:
        return None if self.table is None else self.table.version

    def adopt(self, table: BucketTable, now: float) -> Transition:
        """Move to ``table`` (a newer version); returns the buckets gained and lost."""
        old = self.table
        if old is not None and table.version <= old.version:
            return Transition()
        if old is not None and old.n_buckets != table.n_buckets:
            raise ClusterError(f"table has {table.n_buckets} buckets, this node has {old.n_buckets}")
        self.table = table
        mine = {b for b, owner in enumerate(table.owners) if owner == self.node}
        if old is None:
            self.ready = mine
            return Transition()
        had = self.ready | set(self.awaiting) | self.leaving
        gained = sorted(mine - had)
        lost = sorted((self.ready | self.leaving) - mine)
        lost_awaiting = sorted(set(self.awaiting) - mine)
        for bucket in gained:
            self.awaiting[bucket] = Awaiting(old.owner(bucket), now, earlier=self.owned_before.get(bucket))
        for bucket, (was, owner) in enumerate(zip(old.owners, table.owners, strict=True)):
            if was != owner:
                self.owned_before[bucket] = was
        for bucket in lost:
            self.ready.discard(bucket)
            self.leaving.add(bucket)
        regained = self.leaving & mine  # lost and won back before the export: still ours
        self.leaving -= regained
        self.ready |= regained
        return Transition(tuple(gained), tuple(b for b in lost if b not in regained), tuple(lost_awaiting))

    def resumed(self, stored: BucketTable, now: float) -> list[int]:
        """This node restarted: ``stored`` is the last table it adopted before it stopped, and its first
        table now is newer. Buckets that table gives it and ``stored`` did not were gained while it was
        away: their state is not in its own store but with their owner in ``stored`` (or that owner's
        restore, if it is gone), so they are awaited from it rather than started from nothing. Ready
        from nothing, they fetched again what their owner had fetched (nemesis s3 seed 1146: n2, killed
        and restarted, read as its first table the one that gave it the dead n0's buckets)."""
        table = self.table
        if table is None or stored.n_buckets != table.n_buckets or stored.version >= table.version:
            return []
        moved = sorted(b for b in self.ready if stored.owner(b) != self.node)
        for bucket in moved:
            self.ready.discard(bucket)
            self.awaiting[bucket] = Awaiting(stored.owner(bucket), now)
        return moved

    def take_awaiting(self, bucket: int) -> Awaiting:
        """Stop awaiting ``bucket`` (released or lost); returns what was held."""
        return self.awaiting.pop(bucket)

    def release(self, bucket: int) -> list[Delivery]:
        """The hand-off of ``bucket`` was imported: it is ready; returns the held deliveries."""
        waiting = self.awaiting.pop(bucket)
        owner = self.table.owners[bucket] if self.table is not None else None
        if owner == self.node:
            self.ready.add(bucket)
        else:
            self.leaving.add(bucket)
        return waiting.held

    def reclaimed(self, buckets: list[int], deliveries: dict[int, list[Delivery]]) -> None:
        """The dead previous owners' unacked deliveries of ``buckets`` were re-claimed: they lead
        what each bucket still awaited holds (once each: a claim returns this node's own held ones
        too), and are not claimed again at its release."""
        for bucket in buckets:
            waiting = self.awaiting.get(bucket)
            if waiting is not None:
                claimed = deliveries.get(bucket, [])
                ids = {d.delivery_id for d in claimed}
                waiting.held[:] = [*claimed, *(d for d in waiting.held if d.delivery_id not in ids)]
                waiting.claimed = True

    def unclaimed_gone(self, alive: set[str]) -> list[int]:
        """Awaited buckets whose expected sender is not alive and whose unacked deliveries were not
        claimed since it was last seen alive (a sender seen alive again may read more before it goes)."""
        out = []
        for bucket, waiting in sorted(self.awaiting.items()):
            if waiting.expected is not None and waiting.expected in alive:
                waiting.claimed = False
            elif not waiting.claimed:
                out.append(bucket)
        return out

    def relayed(self, bucket: int, to: str, now: float) -> None:
        """The expected sender of awaited ``bucket`` lost it before its own hand-off came: the hand-off
        that releases it is ``to``'s (the node that sender awaited), waited for from ``now``. Without
        this, its empty hand-off released the bucket and ``to``'s state came later, merged after the
        held URL batches had queued again the pages ``to`` had fetched."""
        waiting = self.awaiting.get(bucket)
        if waiting is not None:
            waiting.expected, waiting.since, waiting.earlier = to, now, None
            waiting.claimed, waiting.gone_since, waiting.restored = False, None, False

    def redirect(self, bucket: int, sender: str, relay: str = "", unheld: bool = False) -> str | None:
        """The node that awaited ``bucket`` is to await instead, given a hand-off from ``sender``
        (None: none). A relay from the expected sender names it. An *unheld* restore from the expected
        sender (it died having gained the bucket in a table it never released it in: its checkpoints do
        not list it) means the bucket's state is still with its owner before that sender, if this
        node knows it and it is not this node: released on that empty state instead, the bucket
        fetched again what its owner before had fetched, whose hand-off came later, held up by a full
        store (nemesis file seed 173)."""
        waiting = self.awaiting.get(bucket)
        if waiting is None or sender != waiting.expected:
            return None
        if relay:
            return relay
        if unheld and waiting.earlier is not None and waiting.earlier != self.node:
            return waiting.earlier
        return None

    def handed_over(self, bucket: int) -> None:
        """The bucket's state was sent and dropped."""
        self.leaving.discard(bucket)

    def classify(self, delivery: Delivery, handoff_sender: str | None, alive: set[str],
                 merge: bool = False, relay: str = "", unheld: bool = False) -> Action:
        """What to do with ``delivery`` (``handoff_sender``: its sender if it is a hand-off; ``merge``:
        it is a merge hand-off, :func:`releases`; ``relay``: the node a relay names; ``unheld``: a dead
        sender's restore of a bucket it never held, :meth:`redirect`)."""
        waiting = self.awaiting.get(delivery.bucket)
        if waiting is not None:
            if handoff_sender is not None and self.redirect(delivery.bucket, handoff_sender, relay, unheld):
                return Action.RELAY
            if handoff_sender is not None and not relay and releases(waiting, handoff_sender, alive, merge, unheld):
                return Action.RELEASE
            waiting.held.append(delivery)
            return Action.HOLD
        if delivery.bucket in self.ready or delivery.bucket in self.leaving:
            return Action.APPLY
        return Action.FORWARD

    def reading(self) -> list[int]:
        """Buckets whose streams this node reads (ready and awaiting)."""
        return sorted(self.ready | set(self.awaiting))

    def is_ready(self, bucket: int) -> bool:
        return bucket in self.ready

    def applied(self) -> bool:
        """Every hand-off of the current table is done, at this node."""
        return not self.awaiting and not self.leaving

    def gone(self, now: float, grace_s: float, alive: set[str]) -> dict[str, list[int]]:
        """Awaited buckets, by expected sender, whose sender has been missing from the members for
        ``grace_s`` (its lease is over: it fetches nothing more) and whose state was not restored yet."""
        out: dict[str, list[int]] = {}
        for bucket, waiting in sorted(self.awaiting.items()):
            if waiting.expected is None or waiting.expected in alive:
                waiting.gone_since = None
                continue
            if waiting.gone_since is None:
                waiting.gone_since = now
            if not waiting.restored and now - waiting.gone_since >= grace_s:
                out.setdefault(waiting.expected, []).append(bucket)
        return out

    def restored(self, buckets: list[int]) -> None:
        """The states of ``buckets`` were re-sent from their gone sender's checkpoints."""
        for bucket in buckets:
            if bucket in self.awaiting:
                self.awaiting[bucket].restored = True

    def silent(self, now: float, timeout_s: float, settled: set[str]) -> set[str]:
        """Expected senders that will never send: alive, they say they applied this node's table or a
        later one with nothing left to hand over (``settled``), and a bucket awaited from them is
        ``timeout_s`` late. (A node restarted after a table gave it buckets, and whose first table is
        the next one, never held them: it hands over nothing.) Their state is restored from their
        checkpoints as from a gone node's."""
        return {w.expected for w in self.awaiting.values()
                if w.expected is not None and w.expected in settled and now - w.since >= timeout_s}

    def overdue(self, now: float, timeout_s: float, alive: set[str]) -> list[int]:
        """Awaited buckets whose expected sender is dead and whose hand-off is late."""
        return sorted(b for b, w in self.awaiting.items()
                      if w.expected is not None and w.expected not in alive and now - w.since >= timeout_s)
