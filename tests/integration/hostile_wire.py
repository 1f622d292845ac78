"""A loopback server that owns each connection whole: a handler reads and writes raw bytes as it likes.

For the fetcher's tests of servers that break HTTP/1.1's framing on purpose:
stray responses on a kept-alive connection, answers before the request,
resets mid-body. Each connection runs ``handler(reader, writer, state)``;
``state`` is shared by the connections of one server (counters, paths seen).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from webgather.clock import SystemClock
from webgather.config import FetchConfig
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver

from tests.integration.loopback_server import LoopbackServer

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "WireState"], Awaitable[None]]


@dataclass
class WireState:
    paths: list[str] = field(default_factory=list)
    """The path of every request read with :func:`read_request`, in arrival order."""


async def no_dns(host: str) -> list[str]:
    """The tests' resolver never asks DNS: every URL names 127.0.0.1."""
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@contextlib.asynccontextmanager
async def wire_client(config: FetchConfig) -> AsyncIterator[HttpClient]:
    """An HttpClient with ``config`` and no DNS, for a :class:`WireServer`."""
    clock = SystemClock()
    async with HttpClient(config, Resolver(clock, lookup=no_dns), clock) as c:
        yield c


def head(status: str, headers: list[tuple[str, str]], version: str = "1.1") -> bytes:
    lines = [f"HTTP/{version} {status}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def page(body: bytes, version: str = "1.1") -> bytes:
    return head("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))], version) + body


async def read_request(reader: asyncio.StreamReader, state: WireState) -> str | None:
    """The next request's path, or None at the end of the connection."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    path = raw.split(b" ", 2)[1].decode("latin-1")
    state.paths.append(path)
    return path


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a crashed peer or a middlebox would."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class WireServer(LoopbackServer):
    """``async with WireServer(handler) as server``: ``server.url(path)``, ``server.state``."""

    def __init__(self, handler: Handler) -> None:
        super().__init__()
        self.handler = handler
        self.state = WireState()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self.handler(reader, writer, self.state)
