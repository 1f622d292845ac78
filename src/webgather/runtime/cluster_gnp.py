"""Network-aware assignment (``--partition-by gnp``): a host goes to one of its K nearest nodes.

The GNP scheduling study gives each site to one of the K crawlers nearest to it
in GNP coordinates. Live, on the two-stage mapping (host -> bucket -> node):

* Measuring (:mod:`webgather.runtime.gnp_probe`): every node httppings the
  landmark hosts (its probe: its coordinates) and every host any node asks
  about, and publishes the filtered figures in the crawl's GNP state
  (:mod:`webgather.cluster.positions`).
* Placing (:class:`GnpPlacements`, this module): a node that meets a host with
  no placement (a link, a batch or hand-off from another node) asks for it,
  waits until ``gnp_dims + 1`` nodes of the table measured it (GNP places a host from
  that many anchors, and the nodes that answer first are the near ones: their
  httpping is the shortest; the others' distances are predicted from the
  coordinates) and every node has coordinates, at most ``gnp_wait_s``,
  fits the coordinates (:mod:`webgather.cluster.gnp_assign`) and picks one of the
  K nearest nodes, then one of *that node's buckets*. The placement is
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
from webgather.runtime.cluster_addresses import SharedAddresses
from webgather.runtime.gnp_probe import Measurer
from webgather.urls import fingerprint

__all__ = ["GnpPlacements", "running_measurer"]

log = logging.getLogger(__name__)
POLL_S = 0.02
"""How often a placing node looks whether the others have measured its hosts."""
T = TypeVar("T")


class GnpPlacements(SharedAddresses):
    """One node's copy of the crawl's host placements, and the placing of new hosts (module docstring)."""

    def __init__(self, book: PositionBook, coordinator: AddressBook, config: CrawlConfig, clock: Clock, *,
                 node: str | None = None) -> None:
        super().__init__(coordinator)
        self.positions = book
        self.cluster = config.cluster
        self.clock = clock
        self.node = node
        """None: no node runs here (seeds are submitted): every new host gets the fallback."""
        self.table: Callable[[], BucketTable | None] = lambda: None
        """The node's current table (set once the node exists)."""
        self.placements: dict[str, Placement] = {}
        self.placed = self.fallbacks = 0
        """Placements this node published that became the crawl's: by GNP, and fallbacks."""
        self.rng = np.random.default_rng(fingerprint(node or "seeds"))
        self._coords: tuple[dict[str, tuple[float, ...]], dict[str, np.ndarray]] = ({}, {})

    def key(self, host: str) -> str | None:
        placement = self.placements.get(host)
        return None if placement is None else bucket_key(placement.bucket, self.cluster.n_buckets)

    async def refresh(self) -> None:
        self.placements.update(await self.positions.get_placements())

    async def learn(self, hosts: Sequence[str]) -> None:
        """Make every host's placement known: stored ones first, then place the rest here."""
        missing = [h for h in dict.fromkeys(hosts) if h not in self.placements]
        if missing:
            self.placements.update(await self.positions.get_placements(missing))
            missing = [h for h in missing if h not in self.placements]
        if missing:
            mine = await self._place(missing)
            stored = await self.positions.publish_placements(mine)
            for host in missing:
                won = stored[host] == mine[host]
                self.placed += won and mine[host].node is not None
                self.fallbacks += won and mine[host].node is None
            self.placements.update(stored)

    async def _place(self, hosts: list[str]) -> dict[str, Placement]:
        table = self.table()
        if self.node is None or table is None:
            return {h: fallback(h, self.cluster.n_buckets) for h in hosts}
        await self.positions.ask(hosts)
        deadline = self.clock.monotonic() + self.cluster.gnp_wait_s
        while True:
            coords = await self._coordinates()
            measured = await self.positions.get_latencies(hosts)
            expected = set(table.nodes)
            quorum = min(len(expected), self.cluster.gnp_dims + 1)
            if expected <= set(coords) and all(len(expected & set(measured.get(h, {}))) >= quorum for h in hosts):
                break
            if self.clock.monotonic() >= deadline:
                break
            await asyncio.sleep(POLL_S)
        return {h: self._choose(h, measured.get(h, {}), coords, table) for h in hosts}

    def _choose(self, host: str, measured: dict[str, float], coords: dict[str, np.ndarray],
                table: BucketTable) -> Placement:
        try:
            placement = choose_placement(host, measured, coords, table, self.cluster.gnp_k, self.rng)
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
