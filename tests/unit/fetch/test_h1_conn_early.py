"""A server that answers as the connection opens, before the request goes out (h1_conn.Connection).

The event loop may deliver those bytes before the fetch's task writes its request (under uvloop, or
behind a TLS handshake): they were dropped as stray and the connection closed, so every attempt
failed with ``reset``. They are the answer to the request about to go out; the connection is not
reused after it.
"""

from __future__ import annotations

import asyncio

from webgather.fetch import h1
from webgather.fetch.h1_conn import Connection, State

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nearly"


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closing = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 80) if name == "peername" else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True


class Collect:
    def __init__(self) -> None:
        self.head: h1.ResponseHead | None = None
        self.body = b""

    def on_head(self, head: h1.ResponseHead) -> None:
        self.head = head

    def on_body(self, piece: bytes) -> int:
        self.body += piece
        return len(self.body)


def open_connection() -> tuple[Connection, FakeTransport]:
    conn = Connection(("http", "h", 80, "127.0.0.1", ""), 1 << 20)
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport


async def test_an_answer_before_the_request_is_the_requests_answer() -> None:
    conn, transport = open_connection()
    conn.data_received(ANSWER)  # before send: the server did not wait for the request
    sink = Collect()
    await asyncio.wait_for(conn.send(b"GET / HTTP/1.1\r\n\r\n", sink), 1)
    assert sink.head is not None and (sink.head.status, sink.body) == (200, b"early")
    assert transport.written.startswith(b"GET /") and conn.state is State.MUST_CLOSE


async def test_an_answer_and_the_end_before_the_request() -> None:
    conn, transport = open_connection()
    conn.data_received(b"HTTP/1.0 200 OK\r\n\r\nall of it")
    transport.closing = True
    conn.connection_lost(None)
    sink = Collect()
    await asyncio.wait_for(conn.send(b"GET / HTTP/1.1\r\n\r\n", sink), 1)
    assert sink.body == b"all of it" and conn.state is State.CLOSED


async def test_bytes_on_a_kept_alive_connection_before_its_request_are_stray() -> None:
    conn, _ = open_connection()
    sink = Collect()
    done = conn.send(b"GET /1 HTTP/1.1\r\n\r\n", sink)
    conn.data_received(ANSWER)
    await done
    assert conn.state is State.REUSABLE
    conn.data_received(ANSWER)  # a second answer nobody asked for
    assert conn.state is State.STRAY
