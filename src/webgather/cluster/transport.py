"""The seams between a node and its cluster backend: protocols only. Pure.

Two backends implement them: :mod:`webgather.cluster.inprocess` (N nodes in one
process, the default and the tests' fake network) and
:mod:`webgather.cluster.redis` (nodes in many processes or machines). The
contract suite ``tests/contract/test_transport_contract.py`` runs the same
tests against both.

:class:`UrlTransport` moves payloads (bytes made by :mod:`webgather.cluster.wire`)
to the node that owns a bucket. There is one ordered *stream* per bucket, not
per node, so a bucket changing hands moves no queue: the new owner simply
starts reading the bucket's stream. Delivery is **at least once**: a delivery
stays *pending* (for the node that received it) until that node acks it; a
node that dies or leaves before acking leaves its deliveries pending, and the
new owner takes them over with :meth:`UrlTransport.claim_stale`. Payloads are
delivered in the order they were sent to the bucket, except re-deliveries.

Hand-off of a bucket with this API (what the node integration does):

1. The coordinator CASes the new table. The old owner stops reading the bucket,
   finishes (adds to its frontier, then acks) what it already received, exports
   the bucket's state and ``send``\\ s it as a :class:`~webgather.cluster.wire.Handoff`
   on the bucket's own stream; then it drops the bucket.
2. The new owner reads the bucket's stream and holds (does not ack, does not
   seen-test) the batches that come before the hand-off message: they were sent
   before the old owner stopped and its seen keys are not here yet. On the
   hand-off it imports the state, then processes the held batches and acks all.
3. If the old owner died instead (its heartbeat expired), no hand-off comes:
   the new owner starts the bucket empty and ``claim_stale`` re-delivers what
   the dead node had read but not acked; URLs the dead node had queued are lost
   with its state unless it resumes from disk under the same node id.

The coordinator protocols keep the state every node must agree on: the
versioned :class:`~webgather.cluster.mapping.BucketTable` (changed only by
compare-and-swap), membership by heartbeat with a TTL, a lease that elects
one coordinating node, the crawl's settings, global counters, and the host
addresses shared for ``--partition-by ip`` (first published wins).
:class:`Coordinator` is their union, which both backends implement.

Every method may raise :class:`~webgather.errors.BackendUnavailable` when the
backend cannot be reached; the operation then may or may not have happened,
and the caller retries (every method is safe to retry: at worst a payload is
sent twice, which the seen-test absorbs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from webgather.cluster.mapping import BucketTable

__all__ = [
    "AddressBook",
    "Backend",
    "Coordinator",
    "Counters",
    "CrawlRegistry",
    "Delivery",
    "Membership",
    "UrlTransport",
]


@dataclass(frozen=True, slots=True)
class Delivery:
    """One payload handed to a node; pending until the node acks ``delivery_id``."""

    bucket: int
    delivery_id: str
    """Unique within the bucket's stream; opaque (compare only for equality)."""
    payload: bytes


class UrlTransport(Protocol):
    """Per-bucket streams of payloads, read by one node (this object's node id).

    Buckets are integers in ``0..n_buckets-1``; an out-of-range bucket raises
    :class:`~webgather.errors.ClusterError`.
    """

    async def send(self, bucket: int, payload: bytes) -> str:
        """Append ``payload`` to ``bucket``'s stream; returns its delivery id.

        Once this returns, the payload is stored and will be delivered to
        whichever node reads the bucket. Nothing is ever dropped for space.
        """
        ...

    async def receive(self, buckets: Sequence[int], max_batches: int,
                      block_s: float) -> list[Delivery]:
        """Up to ``max_batches`` payloads never delivered before, from ``buckets``.

        Each is now pending for this node. Waits up to ``block_s`` seconds when
        nothing is there yet (``0``: do not wait); returns ``[]`` on timeout.
        Payloads of buckets not listed are not delivered (nor marked).
        """
        ...

    async def ack(self, bucket: int, delivery_ids: Sequence[str]) -> int:
        """Mark deliveries of ``bucket`` done (they are then deleted); returns how
        many were pending. Unknown or already-acked ids are ignored."""
        ...

    async def claim_stale(self, buckets: Sequence[int], min_idle_s: float,
                          max_batches: int = 1000) -> list[Delivery]:
        """Re-deliver to this node up to ``max_batches`` pending payloads of ``buckets``
        that were delivered (to any node, this one included) at least
        ``min_idle_s`` seconds ago and never acked. Their idle time restarts."""
        ...

    async def requeue(self, node: str, buckets: Sequence[int]) -> int:
        """Send again every payload of ``buckets`` pending for ``node`` (a dead reader: what it
        read and never acked), as a new payload of its bucket that the next ``receive`` delivers,
        and delete the old one (atomically per bucket); returns how many. Others' deliveries stay."""
        ...

    async def pending_count(self, bucket: int) -> int:
        """Payloads of ``bucket`` not yet acked: never delivered plus delivered."""
        ...

    async def pending_total(self, buckets: Sequence[int]) -> int:
        """:meth:`pending_count` summed over ``buckets``, in one round trip."""
        ...


class CrawlRegistry(Protocol):
    """The bucket table and the crawl's settings."""

    async def get_table(self) -> BucketTable | None:
        """The current bucket table, or None before the first CAS."""
        ...

    async def cas_table(self, expected_version: int | None, new: BucketTable) -> bool:
        """Store ``new`` iff the current table's version is ``expected_version``
        (None: iff there is no table yet). Atomic: of concurrent CASes with the
        same expected version exactly one returns True. ``new.version`` must be
        greater than ``expected_version`` (else ClusterError)."""
        ...

    async def register_crawl(self, settings: Mapping[str, Any], *, defined: bool = False) -> dict[str, Any]:
        """Store the crawl's settings on first call and return them; a later call
        with different settings raises :class:`~webgather.errors.IncompatibleCrawl`
        naming the differing keys. Settings must be JSON values (compared as JSON).
        ``defined``: the caller read the crawl's definition from this backend, so a
        backend that no longer has it lost the crawl's data since:
        :class:`~webgather.errors.CannotContinue`, and nothing stored (the settings
        are the marker by which the crawl's other nodes see the loss)."""
        ...


class Membership(Protocol):
    """Live nodes and the coordinator lease. Expiry runs on the backend's clock."""

    async def heartbeat(self, node: str, info: Mapping[str, Any], ttl_s: float) -> None:
        """Announce ``node`` as alive with ``info`` (JSON values) for ``ttl_s`` seconds."""
        ...

    async def members(self) -> dict[str, dict[str, Any]]:
        """Nodes whose last heartbeat has not expired: ``node -> info``."""
        ...

    async def leave(self, node: str) -> None:
        """Remove ``node`` at once (and release the lease if it holds it)."""
        ...

    async def try_lease(self, node: str, ttl_s: float) -> bool:
        """Take or renew the coordinator lease for ``ttl_s`` seconds. True iff
        ``node`` holds it now: it was free, expired, or already ``node``'s."""
        ...


class Counters(Protocol):
    """Crawl-wide integer counters (pages, cross URLs, bytes...)."""

    async def incr(self, name: str, n: int = 1) -> int:
        """Add ``n`` to counter ``name`` (created at 0); returns the new value."""
        ...

    async def counters(self) -> dict[str, int]:
        """Every counter's current value."""
        ...

    async def take_permits(self, name: str, limit: int, n: int) -> int:
        """Raise counter ``name`` by up to ``n`` without passing ``limit``; returns by how much
        (0 once it is at the limit). Atomic: concurrent takers never take more than
        ``limit`` together. Giving permits back is ``incr(name, -k)``."""
        ...


class AddressBook(Protocol):
    """Host -> address answers shared by every node (``--partition-by ip``).

    Set-if-absent per host: the first answer published for a host is the one
    every node uses, so nodes whose resolvers disagree still agree on the partition."""

    async def publish_addresses(self, answers: Mapping[str, str]) -> dict[str, str]:
        """Store each host's address unless the host has one already (atomic per host); returns
        the stored address of every host in ``answers``: the caller's, or the first published."""
        ...

    async def get_addresses(self, hosts: Sequence[str] | None = None) -> dict[str, str]:
        """The stored addresses of those ``hosts`` that have one (None: of every host)."""
        ...


class Coordinator(CrawlRegistry, Membership, Counters, AddressBook, Protocol):
    """The coordination protocols together (what a backend provides)."""


class Backend(Protocol):
    """One crawl's connection to a backend: hands out transports and the coordinator."""

    def transport(self, node: str) -> UrlTransport:
        """The transport through which ``node`` sends and receives."""
        ...

    def coordinator(self) -> Coordinator:
        """The crawl's coordination state (shared by every node)."""
        ...

    async def aclose(self) -> None:
        """Release connections (idempotent). Stored data stays in the backend."""
        ...
