"""Servers that break HTTP/1.1's framing on purpose, over both transports of HttpClient.

A stray response on a kept-alive connection must never be taken (and archived)
as the answer to the next request; a close-delimited body cut by a reset is
``truncated``, not complete; the total timeout starts when the request goes
out, not while it waits for a slot.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator

import pytest

from tests.integration.hostile_wire import WireServer, wire_client, WireState, head, page, read_request, reset
from webgather.config import FetchConfig
from webgather.fetch.http import HttpClient


@pytest.fixture(params=["native", "aiohttp"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(backend: str) -> AsyncIterator[HttpClient]:
    config = FetchConfig(connect_timeout_s=2.0, total_timeout_s=2.0, http_client=backend)  # type: ignore[arg-type]
    async with wire_client(config) as c:
        yield c


def body_of(path: str) -> bytes:
    return f"<html>the page {path}</html>".encode()


async def empty_then_stray(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: WireState) -> None:
    """Odd pages: ``200 Content-Length: 0``, then (once the next request is in) a stray response
    before that request's own answer; even pages: their own page."""
    stray_owed = b""
    while (path := await read_request(reader, state)) is not None:
        if stray_owed:
            writer.write(stray_owed)
            await writer.drain()
            await asyncio.sleep(0)  # the stray and the answer in separate reads
            stray_owed = b""
        if int(path.strip("/")) % 2:
            writer.write(head("200 OK", [("Content-Length", "0")]))
            stray_owed = page(b"STRAY after " + path.encode())
        else:
            writer.write(page(body_of(path)))
        await writer.drain()


async def test_a_stray_response_is_never_taken_for_the_next_answer(client: HttpClient) -> None:
    async with WireServer(empty_then_stray) as server:
        results = [await client.fetch(server.url(f"/{n}")) for n in range(1, 9)]
    for n, r in enumerate(results, 1):
        assert b"STRAY" not in r.raw_body, (n, r.raw_body)
        if r.status is not None:  # a response was kept: it is this URL's own
            assert r.raw_body == (b"" if n % 2 else body_of(f"/{n}")), (n, r.raw_body)
        else:
            assert r.error == "reset" and n % 2 == 0, (n, r.error, r.error_detail)


async def stray_in_one_write(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: WireState) -> None:
    """Every request: a stray response and then its own answer, in one write."""
    while (path := await read_request(reader, state)) is not None:
        stray = page(b"STRAY") if len(state.paths) > 1 else b""
        writer.write(stray + page(body_of(path)))
        await writer.drain()


async def test_a_response_followed_by_more_bytes_on_a_kept_alive_connection_is_dropped(client: HttpClient) -> None:
    async with WireServer(stray_in_one_write) as server:
        first = await client.fetch(server.url("/1"))
        await asyncio.sleep(0.05)
        second = await client.fetch(server.url("/2"))
    assert (first.status, first.raw_body) == (200, body_of("/1"))
    assert b"STRAY" not in second.raw_body
    assert second.status is None or second.raw_body == body_of("/2")


class EarlyStrayServer:
    """A thread serving one connection: its answer to /1, then 50 ms later a stray response the
    client's event loop has not read when the next request goes out; then each request's own answer."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.listener.settimeout(5)
        try:
            while True:
                conn, _ = self.listener.accept()
                self.connections += 1
                threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True).start()
        except OSError:
            return

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn:
            conn.settimeout(5)
            buffer = b""
            try:
                while True:
                    while b"\r\n\r\n" not in buffer:
                        data = conn.recv(65536)
                        if not data:
                            return
                        buffer += data
                    raw, _, buffer = buffer.partition(b"\r\n\r\n")
                    path = raw.split(b" ")[1].decode()
                    conn.sendall(page(body_of(path)))
                    if number == 1 and path == "/1":
                        time.sleep(0.05)
                        conn.sendall(page(b"STRAY"))
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()


async def test_bytes_waiting_on_an_idle_connection_keep_it_from_carrying_a_request(client: HttpClient) -> None:
    server = EarlyStrayServer()
    try:
        first = await client.fetch(f"http://127.0.0.1:{server.port}/1")
        time.sleep(0.2)  # blocks the loop: the stray waits in the socket, unread, as /2 goes out
        second = await client.fetch(f"http://127.0.0.1:{server.port}/2")
    finally:
        server.close()
    assert (first.status, first.raw_body) == (200, body_of("/1"))
    assert (second.status, second.error, second.raw_body) == (200, None, body_of("/2"))
    assert server.connections == 2


async def close_delimited_then_reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                                     state: WireState) -> None:
    await read_request(reader, state)
    writer.write(head("200 OK", [("Content-Type", "text/html")], version="1.0") + b"<html>" + b"x" * 3000)
    await writer.drain()
    await asyncio.sleep(0.05)
    reset(writer)


async def test_a_close_delimited_body_cut_by_a_reset_is_truncated(client: HttpClient) -> None:
    async with WireServer(close_delimited_then_reset) as server:
        r = await client.fetch(server.url("/cut"))
    assert (r.status, r.error, r.body) == (200, "truncated", b"")
    assert r.raw_body == b"<html>" + b"x" * 3000


async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: WireState) -> None:
    await read_request(reader, state)
    await asyncio.sleep(30)


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: WireState) -> None:
    while (path := await read_request(reader, state)) is not None:
        writer.write(page(body_of(path)))
        await writer.drain()


async def test_the_total_timeout_starts_when_the_request_goes_out(backend: str) -> None:
    config = FetchConfig(connect_timeout_s=1.0, total_timeout_s=0.6, concurrency=2, http_client=backend)  # type: ignore[arg-type]
    async with WireServer(hang) as hung, WireServer(answer) as healthy:
        async with wire_client(config) as c:
            stuck = [asyncio.create_task(c.fetch(hung.url(f"/{n}"))) for n in range(2)]
            await asyncio.sleep(0.1)  # both slots held by the hung server
            queued = await c.fetch(healthy.url("/7"))
            timed_out = await asyncio.gather(*stuck)
    assert [r.error for r in timed_out] == ["timeout", "timeout"]
    assert (queued.status, queued.error, queued.raw_body) == (200, None, body_of("/7"))
    assert queued.elapsed_s < 0.4  # its own time on the wire, not the ~0.5 s it queued

