"""A loopback HTTP/1.1 server for a :class:`WebModel` (the IO shell of the synthetic web).

Built to stay out of a crawler's way: a bare :class:`asyncio.Protocol` (runs
on uvloop when the caller's loop is uvloop), keep-alive, only the request
line and the few headers it needs are parsed, and an LRU of rendered
responses (ready bytes, bounded by ``cache_max_bytes``) makes a warm request
a dict lookup and one ``write``.

It listens on every address of the model (127.0.x.y; several hosts share
one, virtual hosting by ``Host``) on one port, chosen free at start unless
given. An unknown ``Host`` gets 421. Every request is recorded
(:class:`RequestRecord`, in a deque bounded by ``max_records``) so tests can
check politeness. The only state that changes answers is the per-URL attempt
counter of flaky pages. Time: ``clock.wall()`` is the model's ``now_s``
(changing and dying pages), ``clock.monotonic()`` stamps the records.

Faults on the wire: ``reset`` closes with RST before any byte;
``reset_headers`` sends half the header block and closes; ``truncate``
promises a Content-Length and sends half the body; delays (slow pages and the
optional :class:`LatencyModel`) hold the connection without blocking others.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import struct
from collections import OrderedDict, deque
from pathlib import Path
from typing import NamedTuple, cast

from webgather.errors import ConfigError
from webgather.clock import Clock, SystemClock
from webgather.testweb.graph import WebModel
from webgather.testweb.latency import LatencyModel
from webgather.testweb.records import RequestRecord
from webgather.testweb.wire import MAX_HEAD_BYTES, Rendered, Request, parse_head, plain_response

__all__ = ["RequestRecord", "TestWebServer"]


class _Plan(NamedTuple):
    status: int | None
    data: bytes
    mode: str
    """"send", "reset", "reset_headers" or "truncate"."""
    delay_s: float
    close: bool


class TestWebServer:
    """``async with TestWebServer(model) as srv:`` serves ``model`` on loopback until the block ends."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        model: WebModel,
        *,
        port: int = 0,
        clock: Clock | None = None,
        latency: LatencyModel | None = None,
        cache_max_bytes: int = 256 * 1024 * 1024,
        max_records: int = 1_000_000,
    ) -> None:
        self.model = model
        self.requested_port = port
        self.port = 0
        self.clock: Clock = clock or SystemClock()
        self.latency = latency
        self.cache_max_bytes = cache_max_bytes
        self.records: deque[RequestRecord] = deque(maxlen=max_records)
        self.attempts: dict[bytes, int] = {}
        self.requests = self.renders = 0
        self._cache: OrderedDict[bytes, Rendered] = OrderedDict()
        self._cache_bytes = 0
        self._hosts: dict[bytes, bool] = {}
        self._latency_memo: dict[tuple[str, bytes], float] = {}
        self._servers: list[asyncio.Server] = []
        self._connections: set[_Connection] = set()
        self._ids = itertools.count(1)

    # -- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> TestWebServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Listen on every model address, one shared port."""
        addresses = list(self.model.addresses())
        for _ in range(1 if self.requested_port else 8):
            try:
                await self._bind(addresses)
                return
            except OSError as exc:
                await self._close_servers()
                last = exc
        raise ConfigError(f"testweb: cannot listen on {addresses[0]}..{addresses[-1]}: {last.strerror}")

    async def _bind(self, addresses: list[str]) -> None:
        loop = asyncio.get_running_loop()
        first = await loop.create_server(
            lambda: _Connection(self), host=addresses[0], port=self.requested_port, reuse_address=True, backlog=1024
        )
        self._servers.append(first)
        self.port = int(first.sockets[0].getsockname()[1])
        if len(addresses) > 1:
            rest = await loop.create_server(
                lambda: _Connection(self), host=addresses[1:], port=self.port, reuse_address=True, backlog=1024
            )
            self._servers.append(rest)

    async def _close_servers(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    async def close(self) -> None:
        """Stop listening, drop every open connection, cancel pending slow answers."""
        for server in self._servers:
            server.close()
        for connection in list(self._connections):
            connection.drop()
        await self._close_servers()

    # -- addresses for clients -------------------------------------------------------
    def url(self, host: int | str = 0, path: str = "/") -> str:
        return self.model.url(host, path, self.port)

    def home_url(self, host: int | str = 0) -> str:
        return self.model.home_url(host, self.port)

    def resolve_lines(self) -> list[str]:
        return self.model.resolve_lines()

    def write_resolve_file(self, path: str | Path) -> Path:
        """Write the ``host address`` map for a crawler's ``fetch.resolve_file``."""
        target = Path(path)
        target.write_text("\n".join(self.resolve_lines()) + "\n", encoding="ascii")
        return target

    # -- answering -------------------------------------------------------------------
    def _known_host(self, host: bytes) -> bool:
        known = self._hosts.get(host)
        if known is None:
            name = host.partition(b":")[0].decode("latin-1")
            known = self._hosts[host] = self.model.host_index(name) is not None
            if len(self._hosts) > 100_000:
                self._hosts.clear()
        return known

    def _rendered(self, key: bytes, request: Request | None, now: float) -> Rendered:
        entry = self._cache.get(key)
        if entry is not None:
            response = entry.response
            if response.valid_from_s <= now < response.valid_until_s:
                self._cache.move_to_end(key)
                return entry
            self._evict(key)
        url = "http://" + key.decode("latin-1")
        entry = Rendered(self.model.page(url, now), self.model.params.retry_after_s)
        self.renders += 1
        self._cache[key] = entry
        self._cache_bytes += entry.size
        while self._cache_bytes > self.cache_max_bytes and len(self._cache) > 1:
            self._evict(next(iter(self._cache)))
        return entry

    def prerender(self, max_pages: int | None = None) -> int:
        """Render content pages into the cache before a crawl; returns how many.

        Rendering costs about ten times what serving a cached page does, so a
        benchmark that wants the server's per-request cost out of the way calls
        this first. Stops when the cache is full (``cache_max_bytes``).
        """
        now = self.clock.wall()
        done = 0
        for url in self.model.content_urls(self.port):
            if max_pages is not None and done >= max_pages:
                break
            key = url[len("http://"):].encode("latin-1")
            entry = self._rendered(key, None, now)
            entry.payload(True, False)
            done += 1
            if self._cache_bytes >= self.cache_max_bytes:
                break
        return done

    def _evict(self, key: bytes) -> None:
        entry = self._cache.pop(key)
        self._cache_bytes -= entry.size

    def _latency(self, peer: str, host: bytes) -> float:
        if self.latency is None:
            return 0.0
        memo_key = (peer, host)
        value = self._latency_memo.get(memo_key)
        if value is None:
            value = self._latency_memo[memo_key] = self.latency.latency_s(peer, host.decode("latin-1"))
        return value

    def respond(self, request: Request, peer: str) -> _Plan:
        """What to send for one parsed request."""
        self.requests += 1
        if request.method not in (b"GET", b"HEAD"):
            return _Plan(405, plain_response(405, "GET or HEAD only\n"), "send", 0.0, request.close)
        if not request.host or not self._known_host(request.host):
            return _Plan(421, plain_response(421, "no such host here\n"), "send", 0.0, request.close)
        if not request.target.startswith(b"/"):
            return _Plan(400, plain_response(400, "origin-form targets only\n", True), "send", 0.0, True)
        key = request.host + request.target
        entry = self._rendered(key, request, self.clock.wall())
        response = entry.response
        delay = response.delay_s + self._latency(peer, request.host)
        if response.fail_attempts:
            count = self.attempts[key] = self.attempts.get(key, 0) + 1
            if count <= response.fail_attempts:
                if entry.failure is None:
                    return _Plan(None, b"", "reset", delay, True)
                return _Plan(response.fail_status, entry.failure, "send", delay, request.close)
        if response.wire == "reset":
            return _Plan(None, b"", "reset", delay, True)
        if response.wire == "reset_headers":
            return _Plan(None, entry.head_only[: len(entry.head_only) // 2], "reset_headers", delay, True)
        if entry.not_modified is not None and entry.is_not_modified(request):
            return _Plan(304, entry.not_modified, "send", delay, request.close)
        data = entry.payload(request.accept_gzip, request.method == b"HEAD")
        if response.wire == "truncate":
            cut = len(entry.head_only) + (len(entry.full) - len(entry.head_only)) // 2
            return _Plan(response.status, entry.full[:cut], "truncate", delay, True)
        return _Plan(response.status, data, "send", delay, request.close)


class _Connection(asyncio.Protocol):
    """One client connection: requests are answered in order, one at a time."""

    def __init__(self, server: TestWebServer) -> None:
        self.server = server
        self.buffer = bytearray()
        self.busy = False
        self.closed = False
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.conn_id = next(server._ids)
        self.peer = self.local = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio subclasses
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        self.peer = str(peer[0]) if peer else ""
        self.local = str(local[0]) if local else ""
        self.server._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.server._connections.discard(self)

    def drop(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._drain()

    def _drain(self) -> None:
        while not self.busy and not self.closed:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD_BYTES:
                    self._send_raw(plain_response(431, "request head too large\n", True), close=True)
                return
            head = bytes(self.buffer[:end])
            del self.buffer[: end + 4]
            self._handle(head)

    def _handle(self, head: bytes) -> None:
        server = self.server
        start = server.clock.monotonic()
        request = parse_head(head)
        if request is None or request.has_body:
            self._send_raw(plain_response(400, "bad request\n", True), close=True)
            return
        plan = server.respond(request, self.peer)
        if plan.delay_s > 0:
            self.busy = True
            self.timer = asyncio.get_running_loop().call_later(plan.delay_s, self._finish, plan, request, start)
            return
        self._finish(plan, request, start)

    def _finish(self, plan: _Plan, request: Request, start: float) -> None:
        self.timer = None
        self.busy = False
        transport = self.transport
        if self.closed or transport is None:
            return
        # stamped before the bytes go: the write wakes the client, which may keep this process off the CPU
        # for a while; a stamp taken after that would say the response ended later than the client had it
        end = self.server.clock.monotonic()
        if plan.mode == "reset":
            self._reset(transport)
        else:
            transport.write(plan.data)
            if plan.close or plan.mode != "send":
                transport.close()
                self.closed = True
        server = self.server
        server.records.append(RequestRecord(
            start, end, request.host.decode("latin-1"), request.target.decode("latin-1"),
            self.peer, self.local, self.conn_id, plan.status, len(plan.data),
        ))
        if not self.closed and self.buffer:
            self._drain()

    def _reset(self, transport: asyncio.Transport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        transport.abort()
        self.closed = True

    def _send_raw(self, data: bytes, close: bool) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(data)
            if close:
                self.transport.close()
                self.closed = True

