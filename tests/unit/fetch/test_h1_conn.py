"""A connection's one state (h1_conn.State) and the steps it may take (h1_conn.STEPS).

The table is checked as written; then random sequences of what the event loop and the fetcher may do
to a connection (requests, bytes of assorted responses cut anywhere, the peer's end, our close, the
deadline, a cancelled fetch, the settle watch) must never take a step the table forbids, and each
state must mean what it says.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webgather.errors import ConnectionReset, FetchError, ProtocolViolation
from webgather.fetch import h1
from webgather.fetch.h1_conn import STEPS, Connection, State

KEPT = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
CLOSING = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi"
RESPONSES = [
    KEPT, CLOSING,
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n" + b"x" * 40,
    b"\x00not http\r\n\r\n",
]  # fmt: skip
REQUEST = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"


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


def open_connection(max_body_bytes: int = 1 << 20) -> tuple[Connection, FakeTransport]:
    conn = Connection(("http", "h", 80, "127.0.0.1", ""), max_body_bytes)
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport


def test_the_table_names_every_state_and_a_request_goes_out_only_from_fresh_or_reusable() -> None:
    assert set(STEPS) == set(State)
    assert all(targets <= set(State) for targets in STEPS.values())
    assert {s for s, targets in STEPS.items() if State.AWAITING_HEAD in targets} == {
        State.FRESH, State.ENDED_EARLY, State.REUSABLE}  # fmt: skip
    assert not STEPS[State.STRAY]  # the end: nothing leaves it


async def test_a_request_on_a_connection_that_must_close_is_refused() -> None:
    conn, transport = open_connection()
    done = conn.send(REQUEST, Collect())
    conn.data_received(CLOSING)
    await asyncio.wait_for(done, 1)
    assert conn.state is State.MUST_CLOSE
    with pytest.raises(ProtocolViolation, match="may not go from must close to awaiting head"):
        conn.send(REQUEST, Collect())
    assert transport.written == REQUEST  # the second never went out


async def test_a_request_while_a_response_is_being_read_is_refused() -> None:
    conn, transport = open_connection()
    done = conn.send(REQUEST, Collect())
    conn.data_received(KEPT[:40])
    assert conn.state is State.READING_BODY
    with pytest.raises(ProtocolViolation, match="may not go from reading body"):
        conn.send(REQUEST, Collect())
    conn.data_received(KEPT[40:])
    await asyncio.wait_for(done, 1)
    assert conn.state is State.REUSABLE and transport.written == REQUEST


async def test_a_kept_alive_connection_walks_its_states() -> None:
    conn, _ = open_connection()
    assert conn.state is State.FRESH
    for _ in range(3):
        done = conn.send(REQUEST, Collect())
        assert conn.state is State.AWAITING_HEAD
        conn.data_received(KEPT[:40])
        assert conn.state is State.READING_BODY
        conn.data_received(KEPT[40:])
        await asyncio.wait_for(done, 1)
        assert conn.state is State.REUSABLE
    conn.close()
    assert conn.state is State.CLOSED
    with pytest.raises(ConnectionReset):
        conn.send(REQUEST, Collect())


async def test_closing_a_connection_mid_response_fails_the_response() -> None:
    conn, transport = open_connection()
    sink = Collect()
    done = conn.send(REQUEST, sink)
    conn.data_received(KEPT[:39])
    conn.close()
    with pytest.raises(ConnectionReset, match="mid-response"):
        await asyncio.wait_for(done, 1)
    assert conn.state is State.CLOSED and transport.closing and sink.body == b"h"


class Wire:
    """One connection driven by the event loop's callbacks and the fetcher's calls, in any order asyncio
    allows (nothing is delivered after the transport closed; the end is delivered once)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.conn, self.transport = open_connection(max_body_bytes=16)
        self.done: asyncio.Future[None] | None = None
        self.lost = False
        self.wire = bytearray()
        """What the server wrote that the event loop has not delivered yet."""

    def close_loop(self) -> None:
        if self.done is not None:
            self.done.cancel()
        self.loop.close()

    def pending(self) -> bool:
        return self.done is not None and not self.done.done()

    def send(self) -> None:
        before = self.conn.state

        async def go() -> asyncio.Future[None]:
            return self.conn.send(REQUEST, Collect())

        try:
            self.done = self.loop.run_until_complete(go())
        except ConnectionReset:
            assert before in (State.STRAY, State.CLOSED) or self.transport.closing
            assert self.conn.state in (State.STRAY, State.CLOSED)
        except ProtocolViolation:
            assert State.AWAITING_HEAD not in STEPS[before] and self.conn.state is before
        else:
            assert State.AWAITING_HEAD in STEPS[before]

    def write(self, response: bytes, now: int) -> None:
        """The server writes ``response``; the event loop delivers its first ``now`` bytes at once."""
        self.wire += response
        self.deliver(now)

    def deliver(self, size: int) -> None:
        if self.transport.closing or self.lost:  # asyncio delivers nothing after the transport closed
            return
        piece, self.wire = bytes(self.wire[:size]), self.wire[size:]
        if piece:
            self.conn.data_received(piece)

    def end(self, how: str) -> None:
        """Our close, the peer's (cleanly or by a reset: delivered once), the fetch's deadline, or the
        fetch's task cancelled (its future with it)."""
        if how == "close":
            self.conn.close()
        elif how in ("lost", "reset") and not self.lost:
            self.lost = self.transport.closing = True
            self.conn.connection_lost(None if how == "lost" else ConnectionResetError("reset by peer"))
        elif how == "deadline":
            self.conn.time_out(1.0)
        elif how == "cancel" and self.done is not None:
            self.done.cancel()

    def settle(self) -> None:
        if self.pending():  # the fetcher settles only after the response ended
            return
        before = self.conn.state
        try:
            self.loop.run_until_complete(self.conn.settle(0))
        except ConnectionReset:
            assert self.conn.state is State.STRAY
        else:
            assert self.conn.state is before

    def check(self) -> None:
        if self.done is not None and self.done.done() and not self.done.cancelled():
            exc = self.done.exception()
            assert exc is None or isinstance(exc, FetchError)
            assert "may not go from" not in str(exc or "")  # a refused step inside data_received fails the response
        if self.pending():  # a response pends only while it is read
            assert self.conn.state in (State.AWAITING_HEAD, State.READING_BODY)
        if self.conn.state in (State.ENDED_EARLY, State.STRAY, State.CLOSED):
            assert self.transport.closing
        if self.conn.state is State.REUSABLE:
            assert not self.transport.closing and self.conn.early_bytes == 0


EVENTS = st.one_of(
    st.tuples(st.just("send")),
    st.tuples(st.just("write"), st.sampled_from(RESPONSES), st.just(1 << 10)),  # all at once
    st.tuples(st.just("write"), st.sampled_from(RESPONSES), st.sampled_from([0, 1, 20, 40])),
    st.tuples(st.just("deliver"), st.sampled_from([1, 3, 20, 80])),
    st.tuples(st.just("end"), st.sampled_from(["close", "lost", "reset", "deadline", "cancel"])),
    st.tuples(st.just("settle")),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENTS, min_size=4, max_size=40))
def test_random_events_take_only_the_steps_the_table_allows(events: list[tuple[object, ...]]) -> None:
    wire = Wire()
    try:
        for name, *args in events:
            getattr(wire, str(name))(*args)
            wire.check()
    finally:
        wire.close_loop()
