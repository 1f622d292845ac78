"""Two-stage mapping: partition key -> bucket (hash mod M) -> node (bucket table). Pure.

WebGather 2.0's method 3: URLs map to one of M logical buckets by a hash of
their partition key (the host by default), and buckets map to nodes through a
table that is the only thing nodes must agree on. M is fixed for the life of a
crawl, so a join or leave moves whole buckets and nothing else.

The table (:class:`BucketTable`) is an immutable value with a version; every
plan returns a new table whose version is one higher. Plans are deterministic:
nodes are always considered in sorted order, ties are broken by node id, and a
node gives away its highest-numbered buckets first.

* :func:`initial` gives each node a *contiguous* block of buckets (node 0 in
  sorted order gets ``0..k-1``, and so on), the first ``M mod n`` nodes one
  extra. Contiguous rather than round-robin because (a) it is the documents'
  layout (``A[1..5000] -> controller 1``), (b) a node's buckets print and
  serialize as a few ranges, and (c) seen-set keys carry the bucket in their top
  bits, so a node's keys form one key range that a disk tier can scan or hand
  off in one sweep. Load is the same either way: buckets are hash-assigned, so
  every bucket carries the same expected work.
* :func:`plan_join` gives the new node ``floor(M / (n + 1))`` buckets, taken one
  at a time from the currently most loaded node (its highest bucket). Only the
  new node's buckets move: about ``M / (n + 1)``, the minimum for an equal share.
* :func:`plan_leave` hands each of the leaving node's buckets (ascending) to the
  currently least loaded remaining node. Only the leaver's buckets move.

Both keep the invariant that every bucket has exactly one owner and that shares
differ by at most one, provided the input table had it (tables built here do).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webgather.buckets import DEFAULT_BUCKETS, MAX_BUCKETS, bucket_of
from webgather.errors import ClusterError, ConfigError

__all__ = [
    "DEFAULT_BUCKETS",
    "MAX_BUCKETS",
    "BucketTable",
    "bucket_key",
    "bucket_of",
    "initial",
    "moves",
    "plan_join",
    "plan_leave",
    "plan_membership",
]


@functools.cache
def _bucket_keys(n_buckets: int) -> tuple[str, ...]:
    keys: dict[int, str] = {}
    for i in itertools.count():  # ~ M ln M fingerprints (35,000 for M = 4096): a few ms, once
        keys.setdefault(bucket_of(f"#bucket{i}", n_buckets), f"#bucket{i}")
        if len(keys) == n_buckets:
            return tuple(keys[b] for b in range(n_buckets))
    raise AssertionError("unreachable")  # pragma: no cover


def bucket_key(bucket: int, n_buckets: int = DEFAULT_BUCKETS) -> str:
    """A partition key whose bucket is ``bucket`` (the same on every node): how a placement
    chosen per host (``--partition-by gnp``) goes through the one host -> key -> bucket path
    that the router, the frontier and recovery share. No host key starts with ``#``."""
    if not 0 <= bucket < n_buckets:
        raise ClusterError(f"bucket {bucket} out of range 0..{n_buckets - 1}")
    return _bucket_keys(n_buckets)[bucket]


@dataclass(frozen=True)
class BucketTable:
    """Which node owns each of ``n_buckets`` buckets, at a given version."""

    version: int
    n_buckets: int
    owners: tuple[str, ...]
    """``owners[bucket]`` is the node id that owns ``bucket``."""

    def __post_init__(self) -> None:
        if not 1 <= self.n_buckets <= MAX_BUCKETS:
            raise ConfigError(f"n_buckets must be in 1..{MAX_BUCKETS}, got {self.n_buckets}")
        if len(self.owners) != self.n_buckets:
            raise ClusterError(
                f"bucket table has {len(self.owners)} owners for {self.n_buckets} buckets"
            )
        if self.version < 0:
            raise ClusterError(f"bucket table version must be >= 0, got {self.version}")
        if any(not node for node in self.owners):
            raise ClusterError("bucket table has a bucket without an owner")

    @property
    def nodes(self) -> tuple[str, ...]:
        """Node ids that own at least one bucket, sorted."""
        return tuple(sorted(set(self.owners)))

    def owner(self, bucket: int) -> str:
        """Node that owns ``bucket``."""
        if not 0 <= bucket < self.n_buckets:
            raise ClusterError(f"bucket {bucket} out of range 0..{self.n_buckets - 1}")
        return self.owners[bucket]

    def owner_of(self, partition_key: str) -> str:
        """Node that owns a partition key (host key): both stages at once."""
        return self.owners[bucket_of(partition_key, self.n_buckets)]

    def buckets_of(self, node: str) -> tuple[int, ...]:
        """Buckets owned by ``node``, ascending (empty if it owns none)."""
        return tuple(b for b, owner in enumerate(self.owners) if owner == node)

    def shares(self) -> dict[str, int]:
        """Number of buckets per node, in sorted node order."""
        counts: dict[str, int] = {}
        for owner in self.owners:
            counts[owner] = counts.get(owner, 0) + 1
        return {node: counts[node] for node in sorted(counts)}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (for a coordination backend)."""
        return {"version": self.version, "n_buckets": self.n_buckets, "owners": list(self.owners)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BucketTable:
        """Inverse of :meth:`to_dict`; a malformed mapping raises :class:`ClusterError`."""
        try:
            owners = tuple(str(o) for o in data["owners"])
            return cls(int(data["version"]), int(data["n_buckets"]), owners)
        except (KeyError, TypeError, ValueError) as exc:
            raise ClusterError(f"malformed bucket table: {exc!r}") from exc


def _check_nodes(nodes: Iterable[str]) -> list[str]:
    ordered = sorted(set(nodes))
    if not ordered:
        raise ClusterError("a bucket table needs at least one node")
    if any(not isinstance(node, str) or not node for node in ordered):
        raise ClusterError("node ids must be non-empty strings")
    return ordered


def initial(nodes: Iterable[str], n_buckets: int = DEFAULT_BUCKETS) -> BucketTable:
    """Version-0 table: contiguous equal blocks in sorted node order (see module doc)."""
    ordered = _check_nodes(nodes)
    if not 1 <= n_buckets <= MAX_BUCKETS:
        raise ConfigError(f"n_buckets must be in 1..{MAX_BUCKETS}, got {n_buckets}")
    base, extra = divmod(n_buckets, len(ordered))
    owners: list[str] = []
    for i, node in enumerate(ordered):
        owners.extend([node] * (base + (1 if i < extra else 0)))
    return BucketTable(0, n_buckets, tuple(owners))


def _holdings(table: BucketTable) -> dict[str, list[int]]:
    held: dict[str, list[int]] = {node: [] for node in table.nodes}
    for bucket, owner in enumerate(table.owners):
        held[owner].append(bucket)
    return held


def plan_join(table: BucketTable, new_node: str) -> BucketTable:
    """Table after ``new_node`` joins: it takes an equal share, most loaded nodes first."""
    if not new_node:
        raise ClusterError("node ids must be non-empty strings")
    held = _holdings(table)
    if new_node in held:
        raise ClusterError(f"node {new_node!r} already owns buckets")
    target = table.n_buckets // (len(held) + 1)
    owners = list(table.owners)
    for _ in range(target):
        # Most loaded first; among equals the smallest node id (sorted order).
        donor = min(held, key=lambda n: (-len(held[n]), n))
        owners[held[donor].pop()] = new_node
    return BucketTable(table.version + 1, table.n_buckets, tuple(owners))


def plan_leave(table: BucketTable, node: str, idle: Iterable[str] = ()) -> BucketTable:
    """Table after ``node`` leaves: its buckets go, one by one, to the least loaded.

    ``idle`` names live nodes that own no bucket yet (only possible with more
    nodes than buckets); they are the least loaded, so they are served first.
    """
    held = _holdings(table)
    if node not in held:
        raise ClusterError(f"node {node!r} owns no buckets")
    leaving = held.pop(node)
    for extra in idle:
        if extra and extra != node:
            held.setdefault(extra, [])
    if not held:
        raise ClusterError(f"node {node!r} is the last node; nobody can take its buckets")
    owners = list(table.owners)
    for bucket in leaving:
        taker = min(held, key=lambda n: (len(held[n]), n))
        held[taker].append(bucket)
        owners[bucket] = taker
    return BucketTable(table.version + 1, table.n_buckets, tuple(owners))


def plan_membership(table: BucketTable, live_nodes: Iterable[str]) -> BucketTable:
    """Table for a new set of live nodes: leaves first, then joins, in sorted order.

    The result's version is ``table.version + 1`` if anything changed, else the
    table itself is returned (a heartbeat sweep that finds no change is a no-op).
    """
    live = _check_nodes(live_nodes)
    if not set(live) & set(table.nodes):  # nobody stays: nothing to keep, start over
        fresh = initial(live, table.n_buckets)
        return BucketTable(table.version + 1, table.n_buckets, fresh.owners)
    current = table
    for node in table.nodes:
        if node not in live:
            current = plan_leave(current, node)
    for node in live:
        if node not in current.nodes:
            current = plan_join(current, node)
    if current.owners == table.owners:
        return table
    return BucketTable(table.version + 1, table.n_buckets, current.owners)


def moves(old: BucketTable, new: BucketTable) -> dict[int, tuple[str, str]]:
    """Buckets whose owner differs: ``bucket -> (old owner, new owner)``."""
    if old.n_buckets != new.n_buckets:
        raise ClusterError(
            f"tables disagree on the bucket count ({old.n_buckets} vs {new.n_buckets})"
        )
    return {
        b: (before, after)
        for b, (before, after) in enumerate(zip(old.owners, new.owners, strict=True))
        if before != after
    }
