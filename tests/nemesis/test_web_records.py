"""The test web's request records are the nemesis's politeness evidence: what they say must be true of
the client too, however the server process is scheduled."""

from __future__ import annotations

import asyncio
from typing import Any

from nemesis_web import web_params

from webgather.clock import FakeClock
from webgather.testweb import TestWebServer, WebModel
from webgather.testweb.server import _Connection

SCHEDULED_OUT_S = 0.2
"""How long the server process is off the CPU right after handing the response to the socket (the write
wakes the client, which may take the server's core)."""


class _WakingTransport(asyncio.Transport):
    """A transport whose write hands the bytes on at once and then keeps the server off the CPU."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.sent_at: list[float] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name in ("peername", "sockname") else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent_at.append(self.clock.monotonic())
        self.clock.advance(SCHEDULED_OUT_S)

    def close(self) -> None:
        pass


def test_a_response_end_is_stamped_no_later_than_the_bytes_left() -> None:
    """Seed 2 of the file store (2026-11-27): the server stamped a page's end 170 ms after its head while
    the client's own log says the exchange took 48 ms; the next request, 500 ms after the client had the
    page, looked 373 ms after it. A client cannot have a response before the server handed it over, so
    the end stamp must not come after that moment."""
    clock = FakeClock()
    server = TestWebServer(WebModel(web_params(2, 4.0, 1)), clock=clock)
    server.port = 8080  # as if serving (the model answers 400 for port 0)
    connection = _Connection(server)
    transport = _WakingTransport(clock)
    connection.connection_made(transport)
    host = server.home_url(0).split("/")[2]
    connection.data_received(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    (record,) = server.records
    assert record.status == 200
    assert transport.sent_at == [record.end_s]
