"""The first stage of the two-stage mapping: partition key -> bucket. Pure.

A leaf beside :mod:`webgather.urls`: the frontier prefixes its seen keys with a
URL's bucket and the cluster maps buckets to nodes (:mod:`webgather.cluster.mapping`),
so neither needs the other for it.
"""

from __future__ import annotations

from webgather.urls import fingerprint

__all__ = ["DEFAULT_BUCKETS", "MAX_BUCKETS", "bucket_of"]

DEFAULT_BUCKETS = 4096
MAX_BUCKETS = 4096
"""Seen-set keys carry the bucket in their top 12 bits (see frontier.seen)."""


def bucket_of(partition_key: str, n_buckets: int = DEFAULT_BUCKETS) -> int:
    """Bucket of a partition key (a host key, or an IP address with --partition-by ip)."""
    return fingerprint(partition_key) % n_buckets
