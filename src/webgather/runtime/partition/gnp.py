"""Network-aware assignment (``--partition-by gnp``): a host goes to one of its K nearest nodes.

The GNP scheduling study gives each site to one of the K crawlers nearest to it
in GNP coordinates. Live, on the two-stage mapping (host -> bucket -> node):

* Measuring (:mod:`webgather.runtime.partition.gnp_probe`): every node httppings the
  landmark hosts (its probe: its coordinates) and every host any node asks
  about, and publishes the filtered figures in the crawl's GNP state
  (:mod:`webgather.cluster.positions`).
* Placing (:class:`GnpPlacements`, this module): a node that meets a host with
  no placement (a link, a batch or hand-off from another node) asks for it at
  once (at the next poll, even while the hosts parked before it are being
  placed: every node measures it meanwhile, in parallel), once per node,
  waits until ``gnp_dims + 1`` nodes of the table measured it (GNP places a host from
  that many anchors, and the nodes that answer first are the near ones: their
  httpping is the shortest; the others' distances are predicted from the
  coordinates) and every node has coordinates, at most ``gnp_wait_s`` from the ask,
  fits the coordinates (:mod:`webgather.cluster.gnp_assign`) and picks the least
  loaded of its K nearest nodes (load: the hosts GNP gave each node, cluster-wide),
  then one of *that node's buckets*. Each host is published as soon as it is
  ready, not when the slowest of its batch is. The placement is
  published set-if-absent, like the shared addresses of ``--partition-by ip``:
  the first one published is every node's. A host nobody could measure in time
  (or a seed, submitted before any node runs) gets the two-stage bucket
  ``bucket_of(host)``. The router parks a host's URLs meanwhile, exactly as it
  parks them for an address (:class:`~webgather.cluster.router.Router`).
* The placement is expressed as a partition key, :func:`~webgather.cluster.mapping.bucket_key`
  of the chosen bucket: the router, the frontier (its buckets and seen keys),
  seeds and recovery all take host -> key -> bucket already, so none of them
  changes, and this class is a :class:`SharedAddresses` as far as they can tell.

Why a host's bucket never changes (a per-host table consulted before the
hash, not re-placement of live hosts): a host's queued URLs, its seen keys
(the bucket is in their top bits) and its politeness clock live in its bucket,
and the hand-off moves whole buckets, in stream order, with the table protocol
that makes it exact (:mod:`webgather.cluster.handoff`). Moving one host between
buckets mid-crawl would need a second, per-host hand-off with its own ordering
against in-flight batches. Placing a host *before its first URL is filed*
(parking it for one measurement round, tens of ms on the synthetic web) gets
the study's effect with no new hand-off. Joins and leaves move buckets as
always, and the GNP hosts in them with them (nothing lost or fetched twice:
tested); a host is then at the bucket's new owner, which may be farther, so new
hosts go to the nearest of the new table's nodes, old ones stay where their
bucket went. The cost: a host nobody measured within ``gnp_wait_s`` stays on
its hash bucket for the whole crawl.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import numpy as np

from webgather.cluster.gnp_assign import choose_placement, fallback, node_coordinates
from webgather.cluster.mapping import BucketTable, bucket_key
from webgather.cluster.positions import Placement, PositionBook
from webgather.cluster.transport import AddressBook
from webgather.config import CrawlConfig
from webgather.errors import ClusterError, WebgatherError
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver
from webgather.clock import Clock
from webgather.runtime.partition.addresses import SharedAddresses
from webgather.runtime.partition.gnp_probe import Measurer
from webgather.urls import fingerprint

__all__ = ["GnpPlacements", "running_measurer"]

log = logging.getLogger(__name__)
POLL_S = 0.05
"""How often a placing node looks whether the others have measured its hosts."""
T = TypeVar("T")


class GnpPlacements(SharedAddresses):
    """One node's copy of the crawl's host placements, and the placing of new hosts (module docstring)."""

    def __init__(self, book: PositionBook, coordinator: AddressBook, config: CrawlConfig, clock: Clock, *,
                 node: str | None = None, resolver: Resolver | None = None) -> None:
        super().__init__(coordinator, resolver)
        self.positions = book
        self.cluster = config.cluster
        self.clock = clock
        self.node = node
        """None: no node runs here (seeds are submitted): every new host gets the fallback."""
        self.table: Callable[[], BucketTable | None] = lambda: None
        """The node's current table (:meth:`follow`, once the node exists)."""
        self.placements: dict[str, Placement] = {}
        self.placed = self.fallbacks = 0
        """Placements this node published that became the crawl's: by GNP, and fallbacks."""
        self.rng = np.random.default_rng(fingerprint(node or "seeds"))
        self._coords: tuple[dict[str, tuple[float, ...]], dict[str, np.ndarray]] = ({}, {})
        self._met: dict[str, None] = {}
        """Hosts :meth:`key` found unplaced, asked for at the next poll (before their turn to be placed)."""
        self._deadlines: dict[str, float] = {}
        """Hosts this node asked for -> when it stops waiting for their measurements."""

    def follow(self, table: Callable[[], BucketTable | None]) -> None:
        """Place by the node's current table, ``table()`` (once the node exists)."""
        self.table = table

    def key(self, host: str) -> str | None:
        placement = self.placements.get(host)
        if placement is None:
            if self.node is not None and host not in self._deadlines:
                self._met[host] = None  # measured while the hosts parked before it are placed
            return None
        return bucket_key(placement.bucket, self.cluster.n_buckets)

    async def refresh(self) -> None:
        self.placements.update(await self.positions.get_placements())

    async def learn(self, hosts: Sequence[str]) -> None:
        """Make every host's placement known: stored ones first, then place the rest here."""
        missing = [h for h in dict.fromkeys(hosts) if h not in self.placements]
        if missing:
            self.placements.update(await self.positions.get_placements(missing))
            missing = [h for h in missing if h not in self.placements]
        if missing and (self.node is None or self.table() is None):
            await self._publish({h: fallback(h, self.cluster.n_buckets) for h in missing})
        elif missing:
            await self._place(missing)

    async def _place(self, hosts: list[str]) -> None:
        """Place each host as soon as enough nodes measured it (or its wait is over), publishing
        as they come: one slow host does not hold the others back."""
        pending = hosts
        while True:
            await self._ask([*pending, *self._met])
            pending = [h for h in pending if h not in self.placements]
            table = self.table()
            if table is None:  # not expected (a node's table never goes back to None): fall back, never hang
                await self._publish({h: fallback(h, self.cluster.n_buckets) for h in pending})
                return
            coords, measured = await self._coordinates(), await self.positions.get_latencies(pending)
            now = self.clock.monotonic()
            ready = [h for h in pending if self._deadlines[h] <= now or self._measured(measured.get(h, {}), coords)]
            if ready:
                await self._publish(await self._chosen(ready, measured, coords, table))
                pending = [h for h in pending if h not in self.placements]
            if not pending:
                return
            await asyncio.sleep(POLL_S)

    def _measured(self, measured: dict[str, float], coords: dict[str, np.ndarray]) -> bool:
        """Every node has coordinates and ``gnp_dims + 1`` of them (the nearest: the first to answer)
        measured the host."""
        table = self.table()
        expected = set(table.nodes) if table is not None else set()
        quorum = min(len(expected), self.cluster.gnp_dims + 1)
        return expected <= set(coords) and len(expected & set(measured)) >= quorum

    async def _ask(self, hosts: Sequence[str]) -> None:
        """Ask for the hosts not asked for yet (once per node), unless some node placed them already."""
        new = [h for h in dict.fromkeys(hosts) if h not in self._deadlines and h not in self.placements]
        self._met.clear()
        if not new:
            return
        self.placements.update(await self.positions.get_placements(new))
        new = [h for h in new if h not in self.placements]
        await self.positions.ask(new)
        deadline = self.clock.monotonic() + self.cluster.gnp_wait_s
        self._deadlines.update((h, deadline) for h in new)

    async def _chosen(self, hosts: list[str], measured: dict[str, dict[str, float]], coords: dict[str, np.ndarray],
                      table: BucketTable) -> dict[str, Placement]:
        """The placements of ``hosts``, each given to the least loaded of its K nearest nodes."""
        load: Counter[str] = Counter(await self.positions.get_load() if self.cluster.gnp_k > 1 else {})
        chosen = {}
        for host in hosts:
            chosen[host] = self._choose(host, measured.get(host, {}), coords, table, load)
            load[chosen[host].node or ""] += 1  # the next host of the batch sees this one
            if chosen[host].node is None:
                log.info("GNP: %s measured by %d of %d nodes (%d with coordinates) within gnp_wait_s; "
                         "it gets the two-stage bucket", host, len(measured.get(host, {})), len(table.nodes), len(coords))
        return chosen

    async def _publish(self, mine: dict[str, Placement]) -> None:
        stored = await self.positions.publish_placements(mine)
        won = Counter(p.node for h, p in mine.items() if stored[h] == p)
        self.fallbacks += won.pop(None, 0)
        self.placed += sum(won.values())
        await self.positions.add_load({n: c for n, c in won.items() if n is not None})
        self.placements.update(stored)
        for host in mine:
            self._deadlines.pop(host, None)

    def _choose(self, host: str, measured: dict[str, float], coords: dict[str, np.ndarray],
                table: BucketTable, load: Counter[str]) -> Placement:
        try:
            placement = choose_placement(host, measured, coords, table, self.cluster.gnp_k, self.rng, load=load)
        except (WebgatherError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:  # a bad fit: not fatal
            log.warning("GNP: cannot place %s (%s); it gets the two-stage bucket", host, exc)
            placement = None
        return placement or fallback(host, self.cluster.n_buckets)

    async def _coordinates(self) -> dict[str, np.ndarray]:
        """Node coordinates, fitted again only when the published probes changed."""
        probes = await self.positions.get_probes()
        if probes != self._coords[0]:
            fitted = node_coordinates(probes, len(self.cluster.gnp_landmarks), self.cluster.gnp_dims, self.rng)
            self._coords = (probes, fitted)
        return self._coords[1]


async def running_measurer(placements: GnpPlacements, config: CrawlConfig, resolver: Resolver, clock: Clock,
                           work: Awaitable[T]) -> T:
    """Run ``work`` (the node) beside its measuring loop (its probe, then the asked hosts)."""
    if placements.node is None:
        raise ClusterError("a measurer needs a node id")
    async with HttpClient(config.fetch, resolver, clock) as http:
        measurer = Measurer(placements.positions, placements.node, http, landmarks=config.cluster.gnp_landmarks,
                            samples=config.cluster.gnp_samples, modulus_ms=config.cluster.gnp_modulus_ms)
        task = asyncio.get_running_loop().create_task(measurer.run())
        try:
            return await work
        finally:
            measurer.stop()  # and cancel: a cancellation alone can be lost inside the Redis client
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
