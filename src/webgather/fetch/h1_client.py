"""Our HTTP/1.1 transport of :class:`webgather.fetch.http.HttpClient` (the default).

Per fetch: a slot of ``concurrency``, the address from our :class:`Resolver`,
an idle kept-alive connection of the same origin and address from the
:class:`Pool` (at most ``max_idle_connections``, fewer if the process may
open few files) or a new one (``connect_timeout_s``; TLS with SNI for https),
one write, and one timer for ``total_timeout_s`` that fails the response
wherever it is. The connection writes the response into the :class:`Draft`
as it arrives. The request goes out byte for byte as ``Draft.request_headers``
records it, so the WARC request record is what was sent (through a proxy,
:mod:`webgather.fetch.h1_proxy`: what was sent to the origin; the absolute
request target and ``Proxy-Authorization`` are the proxy's alone).

HTTP/1.1 cannot tell which request a response answers, so a connection that shows bytes no request
accounts for is never trusted again: bytes waiting in an idle connection's socket keep it from carrying
a request (a new connection does), and a response on a kept-alive connection that more bytes follow
within :data:`SETTLE_S` is dropped (``reset``: nothing archived, retried by the policy) with its
connection. (A server that answered ``Content-Length: 0`` and then a stray response had the stray
archived as the next URL's page.)

A kept-alive connection the server closed as we wrote (its idle timeout ran
out while our request was on the way) fails with no response byte: the
request is sent once more, the same bytes, on a new connection (RFC 9112
section 9.3.1 allows one automatic retry of an idempotent request; we send
only GET). Never when any response byte arrived, nor when the connection was
new: those are the server's answer, a ``reset`` for the retry policy.

The OS's exceptions are translated here, once, in :func:`_connect_errors`;
the connection itself only raises :class:`FetchError` kinds.

Measured (2026-11-22, 2-core development machine): bench/fetch_speed.py, 4 KB
pages over 32 keep-alive connections, 58 us CPU per fetch against 154 us for
the aiohttp transport (and 90 us for a bare aiohttp session); in whole crawls
(bench/node_ab.py) the node's CPU per page fell by 14 %.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import ssl
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from webgather.config import FetchConfig
from webgather.config.proxyspec import Proxy
from webgather.errors import ConnectFailed, ConnectionReset, FetchTimeout
from webgather.fetch import h1
from webgather.fetch.h1_conn import Connection, Pool, PoolKey, State
from webgather.fetch.h1_proxy import Route, open_tunnel, proxy_errors, route
from webgather.fetch.model import Headers
from webgather.fetch.request import Draft, WireTarget
from webgather.fetch.resolver import Resolver

__all__ = ["NativeTransport"]

_log = logging.getLogger(__name__)

_SETTLE_FROM = (State.REUSABLE, State.STRAY)
"""A response that ended on a kept-alive connection: watched by :meth:`Connection.settle` (STRAY: to fail it)."""

SETTLE_S = 0.005
"""How long a response on a kept-alive connection is watched for stray bytes before it is handed on
(then the socket is polled once more for bytes not yet delivered). A server that sends a stray response
after an answer, or two answers to one request, has the next bytes right behind the first; bytes that
come later find the connection idle and close it, or are found in the socket before it is reused.
Cost, bench/fetch_speed.py (every fetch on a kept-alive connection, the worst case): see the README."""


class NativeTransport:
    """See the module docstring. ``exchange`` fills a :class:`Draft` or raises a ``FetchError``."""

    def __init__(self, config: FetchConfig, resolver: Resolver, verify_tls: bool) -> None:
        self._config = config
        self._resolver = resolver
        self._verify_tls = verify_tls
        self._pool = Pool(_idle_cap(config))
        self._slots = asyncio.Semaphore(config.concurrency)
        self._tls: ssl.SSLContext | None = None

    async def close(self) -> None:
        self._pool.close_all()

    async def exchange(self, target: WireTarget, extra: Headers, draft: Draft, proxy: Proxy | None = None) -> None:
        loop = asyncio.get_running_loop()
        queued_at = loop.time()
        async with self._slots:
            draft.queued_s = loop.time() - queued_at  # the total timeout starts now, not in the queue
            deadline = loop.time() + self._config.total_timeout_s
            draft.peer_ip = await self._resolver.resolve(target.host)  # the origin's, through the guard, proxy or not
            way = await route(target, draft.peer_ip, proxy, self._resolver)
            request = h1.request_bytes(way.request_target, (*draft.request_headers, *way.proxy_headers))
            conn = await self._send_kept(way, target, request, draft, deadline)
            if conn is None:
                conn = await self._connect(way, target, deadline)
                await self._send(conn, request, draft, deadline)
            await self._settle(conn, draft)

    async def _send_kept(self, way: Route, target: WireTarget, request: bytes, draft: Draft,
                         deadline: float) -> Connection | None:
        """``request`` on an idle kept-alive connection (then that connection), or None: none idle, or the
        one taken was closed before any response byte (stale, or holding bytes that predate the request)."""
        loop = asyncio.get_running_loop()
        kept = self._pool.take(way.key, loop.time())
        if kept is None:
            return None
        if kept.has_unread_bytes():
            kept.close()
            self._pool.give_back(kept, loop.time())
            _log.debug("kept-alive connection to %s:%d has unread bytes: a new one", target.host, target.port)
            return None
        try:
            await self._send(kept, request, draft, deadline)
        except ConnectionReset:
            if kept.answer_bytes:  # the server answered something: that is its answer
                raise
            _log.debug("stale keep-alive connection to %s:%d: sending again on a new one", target.host, target.port)
            return None
        return kept

    async def _send(self, conn: Connection, request: bytes, draft: Draft, deadline: float) -> None:
        """The exchange on ``conn``; a failed one gives the connection back (closed) at once."""
        loop = asyncio.get_running_loop()
        # the address connected to, unless that is a proxy's (the key's "via" names it): then
        # WARC-IP-Address stays the origin's, as resolved in fetch
        if not conn.key[4]:
            draft.peer_ip = conn.peer_ip or draft.peer_ip
        timer = loop.call_at(deadline, conn.time_out, self._config.total_timeout_s)
        try:
            await conn.send(request, draft)
        except BaseException:
            self._pool.give_back(conn, loop.time())
            raise
        finally:
            timer.cancel()

    async def _settle(self, conn: Connection, draft: Draft) -> None:
        """Give ``conn`` back, after watching a kept-alive one for stray bytes: a
        response followed by bytes no request accounts for is not archived (``reset``, retried). Inside the
        slot: a connection settling is one of the ``concurrency`` open."""
        loop = asyncio.get_running_loop()
        try:
            if conn.uses > 1 and conn.state in _SETTLE_FROM:
                settling_at = loop.time()
                try:
                    await conn.settle(SETTLE_S)
                finally:
                    draft.settle_s = loop.time() - settling_at
        except ConnectionReset:
            draft.forget_response()
            raise
        finally:
            self._pool.give_back(conn, loop.time())

    async def _connect(self, way: Route, target: WireTarget, deadline: float) -> Connection:
        loop = asyncio.get_running_loop()
        limit_s = max(0.0, min(self._config.connect_timeout_s, deadline - loop.time()))
        tls = self._tls_context() if target.scheme == "https" else None
        key, proxy = way.key, way.proxy
        self._pool.opening()
        try:
            with _connect_errors(limit_s):
                if way.tunnel and proxy is not None and tls is not None:
                    conn = await open_tunnel(key, proxy, target, tls, lambda: Connection(key, self._config.max_body_bytes),
                                             limit_s, _local_addr(self._config))
                else:
                    conn = await self._open(key, target, tls, limit_s, proxy)
        except BaseException:
            self._pool.not_opened()
            raise
        return conn

    async def _open(self, key: PoolKey, target: WireTarget, tls: ssl.SSLContext | None, limit_s: float,
                    proxy: Proxy | None) -> Connection:
        """A TCP (and TLS) connection to the origin, or to the proxy for an http URL."""
        loop = asyncio.get_running_loop()
        with proxy_errors(proxy) if proxy is not None else nullcontext():
            async with asyncio.timeout(limit_s):
                _, conn = await loop.create_connection(
                    lambda: Connection(key, self._config.max_body_bytes), key[3], proxy.port if proxy else key[2],
                    ssl=tls, server_hostname=target.host if tls is not None else None,
                    local_addr=_local_addr(self._config),
                )  # fmt: skip
        return conn

    def _tls_context(self) -> ssl.SSLContext:
        # made on the first https URL: loading the CA store costs ~2 MB and ~80 ms
        if self._tls is None:
            self._tls = ssl.create_default_context()
            if not self._verify_tls:
                self._tls.check_hostname = False
                self._tls.verify_mode = ssl.CERT_NONE
        return self._tls


def _local_addr(config: FetchConfig) -> tuple[str, int] | None:
    """Bind to the node's own address (``fetch.source_address``), any free port."""
    return (config.source_address, 0) if config.source_address else None


def _idle_cap(config: FetchConfig) -> int:
    """``max_idle_connections``, within half the process's file-descriptor limit beside the busy ones."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return config.max_idle_connections
    return max(0, min(config.max_idle_connections, soft // 2 - config.concurrency))


@contextmanager
def _connect_errors(limit_s: float) -> Iterator[None]:
    """Translate the OS's connect failures (TLS handshakes included) into FetchError kinds."""
    try:
        yield
    except TimeoutError as exc:
        raise FetchTimeout(f"connect timed out after {limit_s:g} s") from exc
    except (OSError, ValueError) as exc:  # refused, unreachable, TLS (SSLError is an OSError)
        raise ConnectFailed(" ".join(str(exc).split()) or type(exc).__name__) from exc
