"""A frontier whose buckets follow the crawl's partition key (``--partition-by ip``).

:class:`~webgather.frontier.frontier.Frontier` puts a host in bucket
``bucket_of(host)``: its seen keys carry that bucket, and ``export_bucket`` /
``drop_bucket`` move exactly the hosts of one bucket. With the IP partition a
cluster bucket is ``bucket_of(address of the host)``, so all hosts of one
address land on one node (and that node's per-IP cap then holds for the whole
cluster). :func:`keyed_frontier` makes a subclass whose host -> bucket step
uses the key function, so seen keys, export and drop all follow the cluster's
buckets. ``import_bucket`` is the base method's logic with the membership
check done by key (the base checks ``bucket_of(host)``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from webgather.cluster.mapping import bucket_of
from webgather.errors import FrontierError
from webgather.frontier.bucket import BucketState
from webgather.frontier.frontier import Frontier
from webgather.frontier.seen import seen_keys

__all__ = ["keyed_frontier"]


def keyed_frontier(key: Callable[[str], str]) -> type[Frontier]:
    """A :class:`Frontier` subclass whose host -> bucket step is ``bucket_of(key(host))``."""

    class KeyedFrontier(Frontier):
        def _new_bucket(self, host: str) -> int:
            bucket = bucket_of(key(host), self.n_buckets)
            self.bucket_of_host[host] = bucket
            self.hosts_of_bucket.setdefault(bucket, set()).add(host)
            return bucket

        def import_bucket(self, state: BucketState) -> int:
            if state.n_buckets != self.n_buckets:
                raise FrontierError(f"bucket state for M={state.n_buckets}, this frontier has M={self.n_buckets}")
            self._check_bucket(state.bucket)
            now = self.last_now if np.isfinite(self.last_now) else 0.0
            hosts = self._hosts_of(state.items)
            for host in set(hosts) | {clock.host for clock in state.hosts}:
                if bucket_of(key(host), self.n_buckets) != state.bucket:
                    raise FrontierError(f"host {host!r} is not in bucket {state.bucket}")
                if host not in self.bucket_of_host:
                    self._new_bucket(host)
            for clock in state.hosts:
                self._adopt_clock(clock, now)
            keys = np.asarray(state.seen_keys, dtype=np.uint64)
            fps = np.fromiter((it.fp for it in state.items), dtype=np.uint64, count=len(state.items))
            item_keys = seen_keys(np.full(len(fps), state.bucket, dtype=np.uint64), fps)
            fresh = ~self.seen.contains_many(item_keys)
            all_keys = np.concatenate((keys, item_keys))
            new_mask = self.seen.add_many(all_keys)
            if self.persist is not None:
                self.persist.journal_seen(all_keys[new_mask])
            pairs = [(hosts[i], state.items[i]) for i in np.flatnonzero(fresh).tolist()]
            count = len(self._enqueue(pairs, now, cap=False))
            self._commit()
            return count

    return KeyedFrontier
