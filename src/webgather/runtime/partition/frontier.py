"""A frontier whose buckets follow the crawl's partition key (``--partition-by ip``).

:class:`~webgather.frontier.frontier.Frontier` puts a host in bucket
``bucket_for(host)`` = ``bucket_of(host)``: its seen keys carry that bucket, and
``export_bucket`` / ``import_bucket`` / ``drop_bucket`` move exactly the hosts
of one bucket. With the IP partition a cluster bucket is ``bucket_of(address of
the host)``, so all hosts of one address land on one node (and that node's
per-IP cap then holds for the whole cluster). :func:`keyed_frontier` makes a
subclass that overrides only that one step; everything else is the base's.
"""

from __future__ import annotations

from collections.abc import Callable

from webgather.cluster.mapping import bucket_of
from webgather.frontier.frontier import Frontier

__all__ = ["keyed_frontier"]


def keyed_frontier(key: Callable[[str], str]) -> type[Frontier]:
    """A :class:`Frontier` subclass whose host -> bucket step is ``bucket_of(key(host))``."""

    class KeyedFrontier(Frontier):
        def bucket_for(self, host: str) -> int:
            return bucket_of(key(host), self.n_buckets)

    return KeyedFrontier
