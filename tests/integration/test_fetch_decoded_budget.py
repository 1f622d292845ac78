"""The node's budget of decoded bytes in flight (webgather.fetch.budget), through HttpClient.

Small gzip bodies that decode to megabytes, fetched many at once, each result kept alive
a while (as the node keeps a page until it is parsed and archived): memory stays within
the budget, measured by tracemalloc, where before it grew with the number of fetches.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import socket
import tracemalloc

import pytest

from tests.integration.hostile_wire import WireServer, WireState, head, read_request
from webgather.clock import SystemClock
from webgather.config import FetchConfig
from webgather.fetch.budget import DecodeBudget
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver

MiB = 1024 * 1024
DECODED = 3 * MiB
GZ = gzip.compress(b"<html>" + b" " * (DECODED - 13) + b"</html>", mtime=0)  # ~3 KB on the wire


async def no_dns(host: str) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


async def gzip_pages(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: WireState) -> None:
    while await read_request(reader, state) is not None:
        headers = [("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Content-Length", str(len(GZ)))]
        writer.write(head("200 OK", headers) + GZ)
        await writer.drain()


@pytest.mark.parametrize("backend", ["native", "aiohttp"])
async def test_decoded_bytes_in_flight_stay_within_the_nodes_budget(backend: str) -> None:
    config = FetchConfig(connect_timeout_s=2.0, total_timeout_s=10.0, max_decoded_bytes=4 * MiB,
                         concurrency=32, http_client=backend)  # type: ignore[arg-type]
    clock = SystemClock()
    budget = 4 * 4 * MiB  # BUDGET_PAGES pages of max_decoded_bytes
    gc.collect()
    tracemalloc.start()
    try:
        async with WireServer(gzip_pages) as server, HttpClient(config, Resolver(clock, lookup=no_dns), clock) as c:

            async def page(n: int) -> tuple[int | None, str | None, int]:
                result = await c.fetch(server.url(f"/{n}"))
                await asyncio.sleep(0.4)  # parsed and archived meanwhile: the body is held
                return result.status, result.error, len(result.body)

            outcomes = await asyncio.gather(*(page(n) for n in range(24)))
            peak_reserved, left = c.decoded.peak, c.decoded.used
        _, peak_traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcomes == [(200, None, DECODED)] * 24
    assert peak_reserved <= budget == c.decoded.limit and left == 0
    assert peak_traced < budget + 8 * MiB, peak_traced / MiB  # without the budget: 24 x 3 MiB held at once


async def test_the_budget_lets_one_taker_past_it_and_serves_waiters_in_order() -> None:
    budget = DecodeBudget(10)
    await budget.reserve(8)
    order: list[str] = []

    async def take(name: str, size: int) -> None:
        await budget.reserve(size)
        order.append(name)

    first, second = asyncio.create_task(take("a", 5)), asyncio.create_task(take("b", 1))
    await asyncio.sleep(0.01)
    assert order == [] and budget.used == 8  # "b" would fit, but waits behind "a"
    budget.release(8)
    await asyncio.gather(first, second)
    assert order == ["a", "b"] and budget.used == 6
    budget.release(6)
    await budget.reserve(50)  # over the limit, but alone: it goes (max_decoded_bytes never exceeds it)
    assert budget.used == 50 == budget.peak
