"""Heads built to hurt the fetcher: numbers too long to convert, endless 1xx responses.

Over both transports of HttpClient where the transport's parser is ours to bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import pytest

from tests.integration.hostile_wire import WireServer, wire_client, WireState, head, page, read_request
from webgather.config import CrawlConfig, FetchConfig
from webgather.fetch.http import HttpClient
from webgather.frontier.model import CrawlItem
from webgather.outcome import decide
from webgather.urls import fingerprint

HUGE = "9" * 5000


@pytest.fixture(params=["native", "aiohttp"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(backend: str) -> AsyncIterator[HttpClient]:
    config = FetchConfig(connect_timeout_s=2.0, total_timeout_s=3.0, http_client=backend)  # type: ignore[arg-type]
    async with wire_client(config) as c:
        yield c


def serve(raw: bytes, *, then_hang: bool = False):  # type: ignore[no-untyped-def]
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: WireState) -> None:
        while await read_request(reader, state) is not None:
            writer.write(raw)
            await writer.drain()
            if then_hang:
                await asyncio.sleep(30)

    return handler


async def test_a_content_length_of_5000_digits_is_protocol_without_a_traceback(
    client: HttpClient, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    raw = head("200 OK", [("Content-Type", "text/html"), ("Content-Length", HUGE)]) + b"<html>x</html>"
    with caplog.at_level(logging.ERROR):
        async with WireServer(serve(raw)) as server:
            started = time.monotonic()
            r = await client.fetch(server.url("/huge"))
    assert r.error == "protocol" and "Content-Length" in r.error_detail
    assert time.monotonic() - started < 2.0  # refused at once, not left to the total timeout
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR], caplog.text
    if backend == "native":  # its head is archived (aiohttp's parser gives none back)
        assert (r.status, dict(r.response_headers)["Content-Length"], r.raw_body) == (200, HUGE, b"")


async def test_a_retry_after_of_5000_digits_is_read_as_long_and_the_503_kept(client: HttpClient) -> None:
    raw = head("503 Service Unavailable", [("Retry-After", HUGE), ("Content-Length", "4")]) + b"busy"
    async with WireServer(serve(raw)) as server:
        r = await client.fetch(server.url("/busy"))
    assert (r.status, r.error, r.raw_body) == (503, None, b"busy")
    config = CrawlConfig()
    decision = decide(CrawlItem(r.url, fingerprint(r.url)), r, config, time.time())
    assert (decision.retry, decision.error) == (False, "retry_after")  # longer than any back-off: given up
    assert decision.retry_after_s == config.politeness.retry_after_max_s


async def test_endless_1xx_responses_are_protocol_at_once(backend: str) -> None:
    config = FetchConfig(connect_timeout_s=2.0, total_timeout_s=10.0, http_client=backend)  # type: ignore[arg-type]
    flood = head("102 Processing", []) * 20_000
    async with WireServer(serve(flood + page(b"late"), then_hang=True)) as server:
        async with wire_client(config) as c:
            cpu, started = time.process_time(), time.monotonic()
            r = await c.fetch(server.url("/flood"))
            cpu, wall = time.process_time() - cpu, time.monotonic() - started
    assert (r.status, r.error) == (None, "protocol") and "1xx" in r.error_detail
    assert wall < 2.0 and cpu < 1.0


async def test_1xx_heads_count_in_the_64_kib_head_budget() -> None:
    config = FetchConfig(connect_timeout_s=2.0, total_timeout_s=10.0, http_client="native")
    big_hint = head("103 Early Hints", [("Link", "<" + "a" * 8000 + ">")] * 5)  # 40 KB each, two of them
    async with WireServer(serve(big_hint * 2 + page(b"late"))) as server:
        async with wire_client(config) as c:
            r = await c.fetch(server.url("/hints"))
    assert (r.status, r.error) == (None, "protocol") and "64 KiB" in r.error_detail
