"""httpping with the noise filter, and a node's measuring loop publishing into the crawl's GNP state."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.positions import Placement, positions_of
from webgather.config import FetchConfig
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver
from webgather.clock import SystemClock
from webgather.runtime.partition.gnp_probe import Measurer, httpping_ms, probe_url
from webgather.testweb import TestWebServer, WebModel, WebParams
from webgather.testweb.latency import parse_latency_model

BASE_S, SPIKE_S = 0.02, 0.3


@asynccontextmanager
async def spiky_server(plan: tuple[float, ...] = ()) -> AsyncIterator[tuple[int, list[float]]]:
    """Answers every request after 20 ms, the 2nd after 300 ms (a retransmit's worth); or after
    the delays of ``plan``, in turn."""
    delays: list[float] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                delays.append(plan[len(delays) % len(plan)] if plan else SPIKE_S if len(delays) == 1 else BASE_S)
                await asyncio.sleep(delays[-1])
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], delays
    finally:
        server.close()
        await server.wait_closed()


async def test_httpping_filters_out_a_spike() -> None:
    async with spiky_server() as (port, delays):
        resolver = Resolver(SystemClock(), static={"spiky.test": "127.0.0.1"})
        async with HttpClient(FetchConfig(), resolver, SystemClock()) as http:
            ms = await httpping_ms(http, f"http://spiky.test:{port}/robots.txt", samples=6, modulus_ms=5.0)
    assert len(delays) == 6 and delays.count(SPIKE_S) == 1
    mean_ms = 1000.0 * sum(delays) / len(delays)  # what an unfiltered mean would say: ~63 ms
    assert ms is not None and BASE_S * 1000 <= ms < BASE_S * 1000 + 10 < mean_ms


async def test_httpping_keeps_the_lower_samples_when_queueing_spreads_them() -> None:
    plan = (0.020, 0.050, 0.022, 0.051, 0.090, 0.091)  # queueing pairs up too: the filter alone keeps 3 pairs
    async with spiky_server(plan) as (port, delays):
        resolver = Resolver(SystemClock(), static={"spiky.test": "127.0.0.1"})
        async with HttpClient(FetchConfig(), resolver, SystemClock()) as http:
            ms = await httpping_ms(http, f"http://spiky.test:{port}/robots.txt", samples=6, modulus_ms=5.0)
    assert len(delays) == 6
    assert ms is not None and 20 <= ms < 35 < 1000 * sum(plan) / len(plan)  # the lower half: 20, 22 (, 50) ms


async def test_a_node_stops_measuring_a_host_once_it_is_placed() -> None:
    hub = InProcessHub(64)
    book = positions_of(hub)
    async with spiky_server((0.2,)) as (port, delays):  # a far node: 200 ms a sample
        resolver = Resolver(SystemClock(), static={"far.test": "127.0.0.1"})
        async with HttpClient(FetchConfig(), resolver, SystemClock()) as http:
            measurer = Measurer(book, "n1", http, landmarks=(), samples=5, modulus_ms=5.0)
            await book.ask([f"far.test:{port}"])
            measuring = asyncio.get_running_loop().create_task(measurer.step())
            await asyncio.sleep(0.1)  # during its first sample, the nearer nodes' figures place the host
            await book.publish_placements({f"far.test:{port}": Placement(3, "n2", (1.0, 2.0))})
            assert await asyncio.wait_for(measuring, 5.0) == 1
    assert len(delays) == 1 and await book.get_latencies([f"far.test:{port}"]) == {}  # 1 of 5 samples, unpublished


async def test_httpping_of_a_host_that_never_answers_is_none() -> None:
    resolver = Resolver(SystemClock(), static={"gone.test": "127.0.0.1"})
    async with HttpClient(FetchConfig(connect_timeout_s=1.0), resolver, SystemClock()) as http:
        assert await httpping_ms(http, "http://gone.test:9/robots.txt", samples=2, modulus_ms=5.0) is None


async def test_nodes_publish_probes_and_latencies_that_follow_the_latency_model() -> None:
    web = WebModel(WebParams.for_tests(seed=7, n_hosts=8, mean_pages_per_host=3))
    model = parse_latency_model("cities:4", seed=7)
    hub = InProcessHub(64)
    book = positions_of(hub)
    async with TestWebServer(web, latency=model) as srv:
        hosts = [srv.home_url(i).split("/")[2] for i in range(8)]
        resolver = Resolver(SystemClock(), static=dict(line.split() for line in srv.resolve_lines()))
        landmarks = tuple(probe_url(h) for h in hosts[:3])
        clients = {"n1": "127.0.9.1", "n2": "127.0.9.77"}
        for node, address in clients.items():
            async with HttpClient(FetchConfig(source_address=address), resolver, SystemClock()) as http:
                measurer = Measurer(book, node, http, landmarks=landmarks, samples=3, modulus_ms=5.0)
                await measurer.probe_landmarks()
                if node == "n1":
                    await book.ask(hosts[3:])
                    assert await measurer.step() == 5 and await measurer.step() == 0  # read once
                    await book.publish_placements({hosts[3]: Placement(1, "n1", (0.0, 0.0))})
                else:  # hosts[3] was placed meanwhile: n2 does not measure it
                    assert await measurer.step() == 4 and await measurer.step() == 0
        probes = await book.get_probes()
        lat = await book.get_latencies(hosts[3:])
    assert sorted(probes) == ["n1", "n2"] and all(len(p) == 3 for p in probes.values())
    assert set(lat[hosts[3]]) == {"n1"}
    for host in hosts[3:]:
        for node, address in [(n, a) for n, a in clients.items() if (n, host) != ("n2", hosts[3])]:  # measured = the model's delay + loopback costs (< 10 ms here)
            assert 0 <= lat[host][node] - 1000 * model.latency_s(address, host) < 10


class _LosesCancellations:
    """A position book whose ``asked`` swallows a cancellation, as the Redis client can."""

    def __init__(self, hub: InProcessHub) -> None:
        self.inner = positions_of(hub)
        self.lost = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    async def asked(self, start: int) -> list[str]:
        try:
            await asyncio.sleep(1.0)  # the node ends (0.2 s) while the measurer waits in here
        except asyncio.CancelledError:
            self.lost += 1
        return await self.inner.asked(start)


async def test_the_measurer_ends_with_the_node_even_if_a_cancellation_is_lost() -> None:
    from webgather.config import ClusterConfig, CrawlConfig
    from webgather.runtime.partition.gnp import GnpPlacements, running_measurer

    hub = InProcessHub(64)
    book = _LosesCancellations(hub)
    config = CrawlConfig(cluster=ClusterConfig(n_buckets=64, partition_by="gnp",
                                               gnp_landmarks=("http://l1.test:9/", "http://l2.test:9/")),
                         fetch=FetchConfig(connect_timeout_s=0.5))
    placements = GnpPlacements(book, hub.coordinator(), config, SystemClock(), node="n1")  # type: ignore[arg-type]
    resolver = Resolver(SystemClock(), static={"l1.test": "127.0.0.1", "l2.test": "127.0.0.1"})
    result = await asyncio.wait_for(running_measurer(placements, config, resolver, SystemClock(),
                                                     asyncio.sleep(0.2, result="done")), 5.0)
    assert result == "done" and book.lost >= 1
