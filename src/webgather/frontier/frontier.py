"""The frontier of one node: seen-test + per-host queues + politeness, in one object.

The node calls it from one event-loop thread; every method is synchronous and
returns at once. Data flow: ``add(items)`` seen-tests a batch (keys
``seen_key(bucket_of(host), fp)``, one numpy call for the batch) and queues the
new items per host; ``next_ready(now)`` hands out an item whose host and IP may
be fetched now; ``complete``/``retry`` end a fetch and set the host's clock.

Order: ``bfs`` orders a host's queue by depth (FIFO within one), and among ready hosts
the shallowest head goes first; ``opic`` by minus the cash (:mod:`webgather.frontier.cash`).

Persistence (``state_dir`` given): queued items in SQLite, the seen-set in
:class:`DiskSeen` run files, every change since the last checkpoint in a redo
journal that ``complete``/``retry`` append as one record (the group commit; the
write order and why each crash point is safe: :mod:`webgather.frontier.persist`).
After ``kill -9`` no completed URL is fetched again and no discovered URL is lost;
the items in flight are fetched again (``stats()["resumed_in_flight"]``).
Politeness clocks start afresh after a restart; a host's accepted count survives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from webgather.buckets import MAX_BUCKETS, bucket_of
from webgather.cachepolicy import make_cache
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.errors import ConfigError, FrontierError
from webgather.frontier.adopt import adopt_clock
from webgather.frontier.batch import hosts_of, item_fingerprints, item_keys
from webgather.frontier.bucket import BucketState, HostClock
from webgather.frontier.cash import CashBook
from webgather.frontier.model import CrawlItem
from webgather.frontier.parked import Parked
from webgather.frontier.persist import Persistence, open_persistent
from webgather.frontier.policy import Politeness
from webgather.frontier.queues import HostQueues, MemoryQueues
from webgather.frontier.seen import CachedSeen, MemorySeen, SeenSet, seen_keys

__all__ = ["Frontier"]


class Frontier:
    """Seen-test, per-host queues and politeness scheduling of one node (module docstring)."""

    def __init__(self, config: FrontierConfig, politeness: PolitenessConfig, n_buckets: int,
                 max_pages_per_host: int | None, seen: SeenSet, queues: HostQueues,
                 persist: Persistence | None = None, cash: CashBook | None = None, *,
                 queued: int = 0, resumed_in_flight: int = 0) -> None:
        """``queued`` and ``resumed_in_flight``: what a resumed state holds (:func:`open_persistent`)."""
        self.config = config
        self.n_buckets = n_buckets
        self.max_pages_per_host = max_pages_per_host
        self.seen = CachedSeen(seen, make_cache(config.seen_cache_policy, config.seen_cache_entries))
        self.queues = queues
        self.policy = Politeness(politeness)
        self.persist = persist
        self.cash = cash  # OPIC only
        self.bucket_of_host: dict[str, int] = {}
        self.hosts_of_bucket: dict[int, set[str]] = {}
        self.accepted: dict[str, int] = {}
        self.in_flight_items: dict[int, str] = {}
        self.flying: dict[int, CrawlItem] = {}  # the items themselves: a checkpoint counts them as queued
        self._released: set[int] = set()  # in flight, but their hosts were released
        self.parked = Parked(self._requeue)  # retries waiting for their time: in flight for the queues
        self.queued = queued
        self.dropped_by_host_cap = 0
        self.dropped_done = 0
        """Queued items unqueued by a merged bucket state that had them done (:meth:`import_bucket`)."""
        self.resumed_in_flight = resumed_in_flight
        self.last_now = -math.inf

    @classmethod
    def open(cls, state_dir: Path | None, config: FrontierConfig, politeness: PolitenessConfig,
             n_buckets: int = 4096, max_pages_per_host: int | None = None) -> Frontier:
        """A frontier in memory (``state_dir`` None) or persisted under ``state_dir``
        (created if missing; an existing one is resumed)."""
        if not 1 <= n_buckets <= MAX_BUCKETS:
            raise ConfigError(f"n_buckets must be in 1..{MAX_BUCKETS}, got {n_buckets}")
        if max_pages_per_host is not None and max_pages_per_host < 0:
            raise ConfigError("max_pages_per_host must be >= 0")
        if config.order not in ("bfs", "opic"):
            raise ConfigError(f"frontier.order {config.order!r} is not bfs or opic")
        by_depth = config.order == "bfs"
        if state_dir is None:
            return cls(config, politeness, n_buckets, max_pages_per_host, MemorySeen(),
                       MemoryQueues(by_depth), None, None if by_depth else CashBook())
        return open_persistent(cls, Path(state_dir), config, politeness, n_buckets, max_pages_per_host)

    # -- the hot path ------------------------------------------------------------

    def add(self, items: Sequence[CrawlItem], now: float) -> list[CrawlItem]:
        """Seen-test ``items`` and queue the new ones; returns those queued, in order.

        Within the batch only the first item of a URL counts. New items of a host already at
        ``max_pages_per_host`` are counted, not queued. OPIC: the others credit their cash.
        """
        self._touch(now)
        if not items:
            return []
        hosts = hosts_of(items)
        get, new_bucket = self.bucket_of_host.get, self._new_bucket
        buckets = [b if (b := get(h)) is not None else new_bucket(h) for h in hosts]
        keys = item_keys(buckets, items)
        new_mask = self.seen.add_many(keys)
        new_idx = np.flatnonzero(new_mask).tolist()
        if self.persist is not None and new_idx:
            self.persist.journal_seen(keys[new_mask])
        fresh = self._enqueue([(hosts[i], items[i]) for i in new_idx], now) if new_idx else []
        if self.cash is not None and len(new_idx) < len(items):
            self.cash.credit_queued([(hosts[i], items[i]) for i in np.flatnonzero(~new_mask).tolist()], self, now)
        return fresh

    def requeue(self, items: Sequence[CrawlItem], now: float) -> list[CrawlItem]:
        """Queue URLs seen before again, past the seen-test and the per-host cap (re-crawl
        revisits); commits. The caller must not requeue a URL still queued or in flight."""
        self._touch(now)
        if not items:
            return []
        hosts = hosts_of(items)
        for host in hosts:
            if host not in self.bucket_of_host:
                self._new_bucket(host)
        fresh = self._enqueue(list(zip(hosts, items)), now, cap=False)
        self._commit()
        return fresh

    def next_ready(self, now: float) -> tuple[CrawlItem | None, float]:
        """An item whose host (and IP) may be fetched now, marked in flight, and ``now``;
        or ``None`` and the earliest time one becomes ready by time alone
        (``math.inf`` when nothing is queued, or everything queued waits for a
        request in flight). Call again after ``add``/``complete``/``retry``/``defer_host``."""
        self._touch(now)
        self.parked.release_due(now)
        host, wake_at = self.policy.next_ready(now)
        if host is None:
            return None, min(wake_at, self.parked.due_at())
        item, head = self.queues.pop(host)
        self.policy.set_head(host, head, now)
        self.in_flight_items[item.fp] = host
        self.flying[item.fp] = item
        self.queued -= 1
        return item, now

    def complete(self, item: CrawlItem, now: float, *, response_time_s: float | None = None,
                 error: bool = False, retry_after_s: float | None = None, skipped: bool = False) -> None:
        """The fetch of ``item`` ended at ``now``; it is done, durably (commits).

        The host's next allowed time is set from its delay (counted from now),
        error backoff and Retry-After. ``skipped``: no request was made (robots
        disallowed it): the host's clock is left alone.
        """
        self._touch(now)
        host = self._take_in_flight(item)
        self.queues.finish(host, item, False)
        if self.cash is not None:
            self.cash.done(item.fp)
        if item.fp in self._released:
            self._released.discard(item.fp)
        else:
            self.policy.complete(host, now, response_time_s, error, retry_after_s, skipped=skipped, again=item.attempt > 0)
        self._commit()

    def release_host(self, item: CrawlItem, now: float, *, response_time_s: float | None = None,
                     error: bool = False, retry_after_s: float | None = None) -> None:
        """The request is over: the host may go again (its clock set as by :meth:`complete`) while
        ``item`` stays in flight until :meth:`complete` commits it, once what it yielded is stored."""
        self._touch(now)
        host = self.in_flight_items.get(item.fp)
        if host is None or item.fp in self._released:
            raise FrontierError(f"{item.url!r} is not in flight, or its host was released already")
        self._released.add(item.fp)
        self.policy.complete(host, now, response_time_s, error, retry_after_s, again=item.attempt > 0)

    def retry(self, item: CrawlItem, now: float, *, not_before: float, error: bool = True,
              retry_after_s: float | None = None, skipped: bool = False) -> None:
        """Like :meth:`complete` for the host's clock, but ``item`` is parked (:mod:`.parked`) and goes
        back to its place in its host's queue with ``attempt + 1`` at ``not_before``. ``error=False``
        (no request failed): it goes back at once, and the host waits until ``not_before``.
        ``skipped``: no request was made; the host's clock is left as it was (but ``not_before``)."""
        self._touch(now)
        if item.fp in self._released or (host := self.in_flight_items.get(item.fp)) is None:
            raise FrontierError(f"{item.url!r} is not in flight, or was released (only completed then)")
        self.policy.complete(host, now, None, error, retry_after_s, not_before=None if error else not_before,
                             skipped=skipped, again=item.attempt > 0)
        if error and not_before > now:  # due after the host's next request, not with it: see .parked
            self.parked.park(max(not_before, self.policy.turn_after_next(host)), host, item)
        else:
            self._requeue(host, item, now)

    def _requeue(self, host: str, item: CrawlItem, now: float) -> None:
        self._take_in_flight(item)
        _, head = self.queues.finish(host, item, True)
        if self.cash is not None and (cash := self.cash.table.get(item.fp)) is not None:
            head = self.queues.reprioritize(host, item.fp, -cash)  # what links brought while it was in flight
        self.queued += 1
        self.policy.set_head(host, head, now)
        self._commit()

    # -- host controls ---------------------------------------------------------------

    def defer_host(self, host: str, until: float) -> None:
        """Fetch nothing of ``host`` before ``until`` (replaces its next allowed time)."""
        self.policy.defer(host, until, self.last_now)

    def drop_host(self, host: str) -> list[CrawlItem]:
        """Remove and return the host's queued items (items in flight stay in flight)."""
        removed = self.queues.remove_host(host)
        if self.cash is not None:
            self.cash.forget(removed)
        self.queued -= len(removed)
        self.policy.set_head(host, None, self.last_now)
        return removed

    def set_crawl_delay(self, host: str, seconds: float) -> None:
        """The host's robots.txt Crawl-delay (capped at ``max_crawl_delay_s`` when used)."""
        self.policy.set_crawl_delay(host, seconds)

    def set_host_ip(self, host: str, ip: str) -> None:
        """The host's address: hosts on one address share ``per_ip_connections``."""
        self.policy.set_host_ip(host, ip, self.last_now)

    def queued_hosts(self) -> list[tuple[str, str]]:
        """``(host, url of its queue head)`` for every host with something queued."""
        out = []
        for st in self.policy.hosts():
            if st.head is not None:
                head = self.queues.items(st.host, 1)
                if head:
                    out.append((st.host, head[0].url))
        return out

    # -- cluster hand-off -------------------------------------------------------------

    def export_bucket(self, bucket: int) -> BucketState:
        """The bucket's queued items, seen keys and host clocks (a copy; see :meth:`drop_bucket`)."""
        self._check_bucket(bucket)
        hosts = sorted(self.hosts_of_bucket.get(bucket, ()))
        items = [item for host in hosts for item in self.queues.items(host)]
        items = items if self.cash is None else self.cash.current(items)
        clocks = []
        for host in hosts:
            st = self.policy.known(host)
            if st is not None:
                wait = max(0.0, st.next_allowed_at - self.last_now) if math.isfinite(self.last_now) else 0.0
                clocks.append(HostClock(host, wait, st.crawl_delay_s, st.errors,
                                        st.group if st.group != host else None, self.accepted.get(host, 0)))
        return BucketState(bucket, self.n_buckets, tuple(items), self.seen.export_bucket(bucket), tuple(clocks))

    def import_bucket(self, state: BucketState) -> int:
        """Adopt a bucket exported by another node; returns the number of items queued.

        The merge does not depend on the order: an item queued here is dropped if ``state`` saw its URL
        and does not queue it (the sender fetched it, or dropped it: an export queues every item in
        flight), and an item of ``state`` is queued only if this frontier never saw its URL. A state
        that comes after URL batches of its bucket (a late hand-off, merged into a bucket already
        released here) so does not leave queued the pages it had fetched."""
        if state.n_buckets != self.n_buckets:
            raise FrontierError(f"bucket state for M={state.n_buckets}, this frontier has M={self.n_buckets}")
        self._check_bucket(state.bucket)
        now = self.last_now if math.isfinite(self.last_now) else 0.0
        hosts = hosts_of(state.items)
        for host in set(hosts) | {clock.host for clock in state.hosts}:
            if self.bucket_for(host) != state.bucket:
                raise FrontierError(f"host {host!r} is not in bucket {state.bucket}")
            if host not in self.bucket_of_host:
                self._new_bucket(host)
        for clock in state.hosts:
            adopt_clock(self.policy, self.accepted, self.persist, clock, now)
        keys = np.asarray(state.seen_keys, dtype=np.uint64)
        fps = item_fingerprints(state.items)
        item_keys = seen_keys(np.full(len(fps), state.bucket, dtype=np.uint64), fps)
        fresh = self.seen.add_many(item_keys)  # one item per URL, and none this node already saw
        other = self.seen.add_many(keys)
        if self.persist is not None:
            self.persist.journal_seen(np.concatenate((item_keys[fresh], keys[other])))
        self._drop_done(state.bucket, np.setdiff1d(keys, item_keys), now)
        pairs = [(hosts[i], state.items[i]) for i in np.flatnonzero(fresh).tolist()]
        count = len(self._enqueue(pairs, now, cap=False))
        self._commit()
        return count

    def _drop_done(self, bucket: int, done: np.ndarray, now: float) -> None:
        """Unqueue the bucket's items whose seen keys are in ``done`` (URLs done elsewhere)."""
        if not len(done):
            return
        for host in sorted(self.hosts_of_bucket.get(bucket, ())):
            queued = self.queues.items(host)
            if not queued:
                continue
            gone = np.isin(seen_keys(np.full(len(queued), bucket, dtype=np.uint64), item_fingerprints(queued)), done)
            if not gone.any():
                continue
            kept = [item for item, out in zip(queued, gone.tolist(), strict=True) if not out]
            kept = kept if self.cash is None else self.cash.current(kept)  # with the cash they hold
            self.drop_host(host)
            self.dropped_done += len(queued) - len(kept)
            self._enqueue([(host, item) for item in kept], now, cap=False)

    def drop_bucket(self, bucket: int) -> int:
        """Forget the bucket: its queued items, seen keys and idle hosts. Returns items removed.

        Items of the bucket still in flight stay so: complete them as usual
        (a retry would queue one here again; hand a bucket over when idle).
        """
        self._check_bucket(bucket)
        if self.persist is not None:
            self.persist.spill(self.last_now)  # the journal must not bring the bucket's keys back
        removed = 0
        for host in sorted(self.hosts_of_bucket.pop(bucket, set())):
            removed += len(self.drop_host(host))
            self.bucket_of_host.pop(host, None)
            self.accepted.pop(host, None)
            self.policy.forget(host)
        self._commit()  # queue rows go first: a crash before the keys go leaves stale keys, not duplicates
        self.seen.drop_bucket(bucket)
        return removed

    # -- state ---------------------------------------------------------------------------

    def pending(self) -> int:
        """Items queued or parked for a retry, not being fetched."""
        return self.queued + len(self.parked)

    def in_flight(self) -> int:
        return len(self.in_flight_items) - len(self.parked)

    def is_done(self) -> bool:
        """Nothing queued and nothing in flight."""
        return self.queued == 0 and not self.in_flight_items

    def stats(self) -> dict[str, int | float]:
        """Counters for progress displays and tests (O(hosts): call it at human rates)."""
        out: dict[str, int | float] = {
            "queued": self.pending(), "in_flight": self.in_flight(), "seen": len(self.seen),
            "cache_hits": self.seen.hits, "cache_lookups": self.seen.lookups,
            "dropped_by_host_cap": self.dropped_by_host_cap, "dropped_done": self.dropped_done,
            "resumed_in_flight": self.resumed_in_flight,
            "queued_in_memory": getattr(self.queues, "in_memory", self.queued),
        }
        out.update(self.cash.stats() if self.cash is not None else {})
        out.update(self.policy.counts(self.last_now))
        return out

    def flush(self) -> None:
        """Make everything durable now, and checkpoint the journal into the database."""
        if self.persist is not None:
            self.persist.checkpoint(self.last_now)

    def restore_host(self, host: str, head: float) -> None:
        """Resume: a host with queued items whose queue head has priority ``head``."""
        if host not in self.bucket_of_host:
            self._new_bucket(host)
        self.policy.set_head(host, head, self.last_now)

    def close(self) -> None:
        """Flush and release files; the frontier is unusable afterwards."""
        if self.persist is not None:
            self.persist.close(self.last_now)
            self.persist = None

    # -- internals ------------------------------------------------------------------------

    def _touch(self, now: float) -> None:
        if now > self.last_now:
            self.last_now = now

    def _commit(self) -> None:
        if self.persist is not None:
            self.persist.commit(self.last_now)

    def bucket_for(self, host: str) -> int:
        """The bucket of a host: ``bucket_of(host)``. A subclass may key buckets otherwise
        (e.g. by the host's IP); seen keys, hand-off and import all follow this."""
        return bucket_of(host, self.n_buckets)

    def _new_bucket(self, host: str) -> int:
        bucket = self.bucket_for(host)
        self.bucket_of_host[host] = bucket
        self.hosts_of_bucket.setdefault(bucket, set()).add(host)
        return bucket

    def _enqueue(self, pairs: list[tuple[str, CrawlItem]], now: float, cap: bool = True) -> list[CrawlItem]:
        by_host: dict[str, list[CrawlItem]] = {}
        for host, item in pairs:
            group = by_host.get(host)
            if group is None:
                group = by_host[host] = []
            group.append(item)
        fresh: list[CrawlItem] = []
        for host, group in by_host.items():
            if cap:
                group = self._within_cap(host, group)
            if group:
                self.policy.set_head(host, self.queues.push(host, group), now)
                fresh.extend(group)
        self.queued += len(fresh)
        if self.cash is not None:
            self.cash.queued(fresh)
        return fresh

    def _within_cap(self, host: str, group: list[CrawlItem]) -> list[CrawlItem]:
        cap = self.max_pages_per_host
        if cap is None:
            return group
        if any(item.kind.startswith("requisite") for item in group):  # not pages: the page cap leaves them be
            pages = [item for item in group if not item.kind.startswith("requisite")]
            return self._within_cap(host, pages) + [item for item in group if item.kind.startswith("requisite")]
        before = self.accepted.get(host)
        if before is None:
            before = self.persist.accepted_of(host) if self.persist is not None else 0
        take = max(0, min(len(group), cap - before))
        self.dropped_by_host_cap += len(group) - take
        if take:
            self.accepted[host] = before + take
            if self.persist is not None:
                self.persist.accepted(host, before + take)
        return group[:take]

    def _take_in_flight(self, item: CrawlItem) -> str:
        host = self.in_flight_items.pop(item.fp, None)
        self.flying.pop(item.fp, None)
        if host is None:
            raise FrontierError(f"{item.url!r} is not in flight")
        return host

    def _check_bucket(self, bucket: int) -> None:
        if not 0 <= bucket < self.n_buckets:
            raise FrontierError(f"bucket {bucket} outside 0..{self.n_buckets - 1}")
