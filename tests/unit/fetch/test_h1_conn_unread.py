"""Connection.has_unread_bytes: one poll registration per open connection, never one for a closed socket.

The check runs before every request on a kept-alive connection; building and registering a poll
object each time cost 3.2 us, polling a kept one 1.1 us. A kept registration must not outlive the
transport: once closed, the socket's number may belong to another connection.
"""

from __future__ import annotations

import asyncio
import os
import select
import socket
from collections.abc import Callable, Iterator

import pytest

from webgather.fetch import h1_conn
from webgather.fetch.h1_conn import Connection


class SocketTransport(asyncio.Transport):
    """Just enough of a transport around one end of a socket pair (the event loop never reads it)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.closing = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"peername": ("127.0.0.1", 80), "socket": self.sock}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sock.sendall(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True
        self.sock.close()


@pytest.fixture
def polls(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every poll object h1_conn creates."""
    made: list[object] = []
    real = select.poll

    def counted() -> select.poll:
        made.append(poller := real())
        return poller

    monkeypatch.setattr(h1_conn.select, "poll", counted)
    return made


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, peer = socket.socketpair()
    yield ours, peer
    ours.close()
    peer.close()


def open_on(sock: socket.socket) -> tuple[Connection, SocketTransport]:
    conn = Connection(("http", "h", 80, "127.0.0.1", ""), 1 << 20)
    transport = SocketTransport(sock)
    conn.connection_made(transport)
    return conn, transport


def test_checks_on_one_connection_share_one_poll_registration(
        polls: list[object], pair: tuple[socket.socket, socket.socket]) -> None:
    ours, peer = pair
    conn, _ = open_on(ours)
    assert [conn.has_unread_bytes() for _ in range(3)] == [False] * 3
    peer.sendall(b"x")
    assert conn.has_unread_bytes()
    ours.recv(1)
    assert not conn.has_unread_bytes()
    assert len(polls) == 1


def _close(conn: Connection, transport: SocketTransport) -> None:
    conn.close()


def _lost(conn: Connection, transport: SocketTransport) -> None:
    transport.close()  # the event loop's own doing: the peer ended the connection
    conn.connection_lost(None)


@pytest.mark.parametrize("end", [_close, _lost], ids=["we close", "the peer closes"])
def test_a_closed_connection_does_not_poll_the_socket_that_took_its_number(
        polls: list[object], end: Callable[[Connection, SocketTransport], None]) -> None:
    ours, peer = socket.socketpair()
    conn, transport = open_on(ours)
    assert not conn.has_unread_bytes()  # registered while open
    number = ours.fileno()
    end(conn, transport)  # the transport closed the socket: its number is free
    other, other_peer = socket.socketpair()  # another connection, bytes waiting at both ends
    dup = number not in (other.fileno(), other_peer.fileno())
    try:
        if dup:  # neither end took the number by itself: give it one
            os.dup2(other.fileno(), number)
        other.sendall(b"x")
        other_peer.sendall(b"x")
        assert select.select([number], [], [], 0)[0]  # the number now reads as that other connection
        assert not conn.has_unread_bytes()
    finally:
        if dup:
            os.close(number)
        for sock in (other, other_peer, peer):
            sock.close()
