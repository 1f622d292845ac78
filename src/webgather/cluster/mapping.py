"""Two-stage mapping: partition key -> bucket (hash mod M) -> node (bucket table). Pure.

WebGather 2.0's method 3: URLs map to one of M logical buckets by a hash of
their partition key (the host by default), and buckets map to nodes through a
table that is the only thing nodes must agree on. M is fixed for the life of a
crawl, so a join or leave moves whole buckets and nothing else.
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
