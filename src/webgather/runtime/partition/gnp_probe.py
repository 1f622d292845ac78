"""httpping: what a node measures for GNP (``--partition-by gnp``), and the loop that measures.

httpping of a host is the time of a small HTTP request to it (``/robots.txt``,
which a crawler fetches anyway), from the node's own source address. One
measurement is ``gnp_samples`` requests in a row on one kept-alive connection;
:func:`webgather.gnp.filter_samples` (the study's noise filter: bucket the
samples by ``gnp_modulus_ms``, average the three fullest buckets), applied to
the lower half of the samples, turns them into one figure, so a retransmit or a
queueing spike does not move it. The lower half because queueing (on the path,
or in a loaded machine's scheduler, on either end) only ever adds delay, and on
a loaded machine its delays form buckets of their own (two samples 50 ms late
are a "mode" to the filter, which then averages them in): the lower samples are
the nearer to the path's own latency. Samples
that got no response are left out; a host none of whose samples answered has
no figure (it is never published, and the host falls back to the two-stage
mapping when nobody measured it).

:class:`Measurer` is one node's loop: the landmarks once (the node's probe,
published in ``gnp:probes``: the node's coordinates come from it) and, from the
start and for ever, every host any node asked about (``gnp:asks``, read from the index it has
reached), published in ``gnp:lat:<host>`` as soon as that host is measured (hosts are
measured in parallel, up to :data:`CONCURRENCY` at once: one far host does not hold
back the figures of the near ones), unless it is placed already: a host is placed once
per crawl (its placement stays in the crawl's state across runs and recrawl cycles), so a
restarted node does not measure the hosts of earlier runs again, nor a node the hosts
placed before it came to them, and a far node stops measuring a host (between two samples)
once the nearer nodes' figures have placed it. It uses its own HTTP client (the
node's fetch settings, so the same source address), outside the crawl's
politeness: a few requests per host and node, as in the study.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from webgather import gnp
from webgather.cluster.positions import PositionBook
from webgather.errors import BackendUnavailable, ClusterError
from webgather.fetch.http import HttpClient

__all__ = ["Measurer", "httpping_ms", "probe_url"]

log = logging.getLogger(__name__)
POLL_S = 0.05
"""How often a node looks for new asks."""
CONCURRENCY = 64
"""Hosts measured at once (each waits on the network: a few sockets, little CPU)."""
RETRY_S = 0.5


def probe_url(host: str) -> str:
    """The small request of a host key (``host[:port]``)."""
    return f"http://{host}/robots.txt"


async def httpping_ms(http: HttpClient, url: str, samples: int, modulus_ms: float, *,
                      moot: Callable[[], Awaitable[bool]] | None = None) -> float | None:
    """Filtered time in ms of ``samples`` GETs of ``url`` (None: no response at all, or ``moot()``
    became true between two samples: the figure is no longer wanted)."""
    times_ms = []
    for i in range(samples):
        if i and moot is not None and await moot():
            return None
        result = await http.fetch(url)
        if result.status is not None:
            times_ms.append(result.elapsed_s * 1000.0)
    if not times_ms:
        return None
    lower = sorted(times_ms)[:(len(times_ms) + 1) // 2]  # queueing only adds delay (module docstring)
    return max(gnp.filter_samples(lower, modulus_ms), 0.001)  # a stored latency is > 0


class Measurer:
    """One node's httpping loop (module docstring)."""

    def __init__(self, book: PositionBook, node: str, http: HttpClient, *, landmarks: Sequence[str],
                 samples: int, modulus_ms: float) -> None:
        self.book = book
        self.node = node
        self.http = http
        self.landmarks = tuple(landmarks)
        self.samples = samples
        self.modulus_ms = modulus_ms
        self.index = 0
        """How far this node has read ``gnp:asks``."""
        self.measured: set[str] = set()
        self.probe: tuple[float, ...] | None = None
        self.stopped = False
        self._slots = asyncio.Semaphore(CONCURRENCY)

    async def _measure(self, urls: Sequence[str]) -> list[float | None]:
        async def one(url: str) -> float | None:
            async with self._slots:
                return await httpping_ms(self.http, url, self.samples, self.modulus_ms)
        return list(await asyncio.gather(*(one(url) for url in urls)))

    async def probe_landmarks(self) -> None:
        """Measure every landmark and publish the probe (not if a landmark never answered)."""
        values = await self._measure(self.landmarks)
        if any(v is None for v in values):
            missing = [u for u, v in zip(self.landmarks, values, strict=True) if v is None]
            log.warning("GNP: no answer from landmarks %s: node %s has no coordinates and gets no "
                        "GNP-placed hosts", ", ".join(missing), self.node)
            return
        self.probe = tuple(v for v in values if v is not None)
        await self.book.publish_probe(self.node, self.probe)

    async def step(self, group: asyncio.TaskGroup | None = None) -> int:
        """Measure the hosts asked for since the last step and publish each as soon as it is
        measured (in ``group``, not awaited: None awaits them); returns how many."""
        asked = await self.book.asked(self.index)
        fresh = [h for h in dict.fromkeys(asked) if h not in self.measured]
        if fresh:  # a host placed already (in an earlier run of the crawl, or by the nearer nodes) is not measured
            placed = await self.book.get_placements(fresh)
            self.measured.update(placed)
            fresh = [h for h in fresh if h not in placed]
        self.measured.update(fresh)
        self.index += len(asked)
        if group is None:
            await asyncio.gather(*(self._measure_one(h) for h in fresh))
        else:
            for host in fresh:
                group.create_task(self._measure_one(host))
        return len(fresh)

    async def _measure_one(self, host: str) -> None:
        async def placed() -> bool:  # by the nearer nodes' figures: this node's is not needed any more
            try:
                return bool(await self.book.get_placements([host]))
            except (BackendUnavailable, ClusterError):  # cannot tell: measure on
                return False
        async with self._slots:
            value = await httpping_ms(self.http, probe_url(host), self.samples, self.modulus_ms, moot=placed)
        while value is not None and not self.stopped:
            try:
                await self.book.publish_latencies(self.node, {host: value})
                return
            except BackendUnavailable:
                await asyncio.sleep(RETRY_S)

    async def run(self) -> None:
        """Probe the landmarks and, meanwhile and after, measure asked hosts until cancelled
        (retrying while the backend is away): others wait for this node's figures."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._probe_retrying())
            while not self.stopped:
                try:
                    if not await self.step(group):
                        await asyncio.sleep(POLL_S)
                except BackendUnavailable:
                    await asyncio.sleep(RETRY_S)

    def stop(self) -> None:
        """End :meth:`run` at its next step (a cancellation can be lost inside the Redis client)."""
        self.stopped = True

    async def _probe_retrying(self) -> None:
        while not self.stopped:
            try:
                await self.probe_landmarks()
                return
            except BackendUnavailable:
                await asyncio.sleep(RETRY_S)
