"""A small HTTP/1.1 forward proxy on loopback for the tests: absolute-form GETs and CONNECT tunnels.

It records every request head it gets (:attr:`ForwardProxy.requests`), asks for Basic credentials
when given some (407 otherwise), and resolves host names only from the map it is given (never DNS;
an unknown name gets 502). Bytes from the origin go back as they come, and an origin that closes
its connection closes the client's: the origin's faults (resets, short bodies, slow heads) reach
the crawler as they would directly. A GET for another origin than the last one on a connection
opens a new upstream connection. Everything it opened is closed on exit.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

_HOP_BY_HOP = {"proxy-authorization", "proxy-connection"}


@dataclass(frozen=True)
class Forwarded:
    method: str
    target: str
    headers: dict[str, str]
    """Lower-case names."""


@dataclass
class _Upstream:
    authority: str
    writer: asyncio.StreamWriter
    pipe: asyncio.Task[None]


class ForwardProxy:
    def __init__(self, resolve: Mapping[str, str], credentials: tuple[str, str] | None = None,
                 host: str = "127.0.0.1") -> None:
        self.resolve, self.credentials, self.host, self.port = dict(resolve), credentials, host, 0
        self.requests: list[Forwarded] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        """Pipes from origins (cancelled on exit; asyncio's handler tasks are not: it logs a cancelled one)."""
        self._handlers: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    def url(self, credentials: tuple[str, str] | None = None) -> str:
        user = f"{credentials[0]}:{credentials[1]}@" if credentials else ""
        return f"http://{user}{self.host}:{self.port}"

    async def __aenter__(self) -> ForwardProxy:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):  # the handlers see their client go and return
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=5.0)
        await self._server.wait_closed()

    def _spawn(self, coro: object) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        current = asyncio.current_task()
        if current is not None:
            self._handlers.add(current)  # type: ignore[arg-type]
            current.add_done_callback(self._handlers.discard)  # type: ignore[arg-type]
        upstream: _Upstream | None = None
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
                    return
                method, target, headers = _parse(head)
                self.requests.append(Forwarded(method, target, headers))
                if not self._authorized(headers):
                    writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic "
                                 b"realm=\"test\"\r\nContent-Length: 4\r\nConnection: close\r\n\r\nauth")
                    await writer.drain()
                    return
                if method == "CONNECT":
                    await self._tunnel(target, reader, writer)
                    return
                upstream = await self._forward(target, head, upstream, writer)
                if upstream is None:
                    return
        except OSError:
            return
        finally:
            if upstream is not None:
                upstream.writer.close()
            writer.close()
            self._writers.discard(writer)

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.credentials is None:
            return True
        token = base64.b64encode(f"{self.credentials[0]}:{self.credentials[1]}".encode()).decode()
        return headers.get("proxy-authorization") == f"Basic {token}"

    async def _open(self, authority: str, default_port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        parts = urlsplit(f"//{authority}")
        host = parts.hostname or ""
        address = self.resolve.get(host, host if host.replace(".", "").isdigit() else "")
        if not address:
            raise OSError(f"no address for {host!r}")
        return await asyncio.wait_for(asyncio.open_connection(address, parts.port or default_port), 5.0)

    async def _forward(self, target: str, head: bytes, upstream: _Upstream | None,
                       client: asyncio.StreamWriter) -> _Upstream | None:
        parts = urlsplit(target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if upstream is None or upstream.authority != parts.netloc:
            if upstream is not None:  # detach the last origin's pipe first: its close is not the client's
                upstream.pipe.cancel()
                upstream.writer.close()
            try:
                origin_reader, origin_writer = await self._open(parts.netloc, 80)
            except (OSError, TimeoutError):
                client.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                await client.drain()
                return None
            upstream = _Upstream(parts.netloc, origin_writer, self._spawn(_pipe(origin_reader, client, close=True)))
        lines = head.decode("latin-1").split("\r\n")
        kept = [line for line in lines[1:] if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
        upstream.writer.write(("\r\n".join([f"GET {path} HTTP/1.1", *kept]) + "\r\n\r\n").encode("latin-1"))
        await upstream.writer.drain()
        return upstream

    async def _tunnel(self, target: str, reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        try:
            origin_reader, origin_writer = await self._open(target, 443)
        except (OSError, TimeoutError):
            client.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            await client.drain()
            return
        client.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        back = self._spawn(_pipe(origin_reader, client, close=True))
        try:
            await _pipe(reader, origin_writer, close=True)
            await asyncio.wait([back], timeout=10.0)
        finally:
            origin_writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, close: bool) -> None:
    """Copy until ``source`` ends, then close ``sink``; a cancelled pipe leaves ``sink`` open."""
    try:
        while True:
            data = await source.read(65536)
            if not data:
                break
            sink.write(data)
            await sink.drain()
    except OSError:
        pass
    except asyncio.CancelledError:
        return
    if close:
        sink.close()


def _parse(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


@contextlib.contextmanager
def closed_port(host: str = "127.0.0.1"):  # type: ignore[no-untyped-def]
    """A port on ``host`` nobody listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        port = sock.getsockname()[1]
    yield port
