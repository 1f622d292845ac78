"""Our HTTP/1.1 transport through an HTTP proxy: the route of a request, and CONNECT tunnels.

:func:`route` says where a request goes and what its request line says:

* direct: to the origin's address, ``GET /path``;
* an http URL through a proxy: to the proxy, ``GET http://host/path`` (absolute form, RFC 9112
  3.2.2) plus ``Proxy-Authorization``; connections to the proxy are kept per origin, as direct
  ones are (a simple proxy ties one upstream connection to each client connection: sharing ours
  across origins made the tests' proxy reconnect upstream on most requests; bench/proxy_speed.py,
  medians of 3 rounds on a shared 2-core machine: 105 pages/s against 149 direct when shared,
  173 against 172 per origin);
* an https URL through a proxy: ``CONNECT host:port`` to the proxy (:func:`open_tunnel`), then
  TLS with the origin inside the tunnel (SNI and certificate checks are the origin's, as direct),
  then ``GET /path``; a tunnel serves its one origin.

Either way ``Draft.request_headers`` (the WARC's request record) holds the origin request only:
``Proxy-Authorization`` goes to the proxy, never to the origin or the archive. The origin's address
was resolved and judged by the guard before; the proxy's comes from
:meth:`Resolver.resolve_trusted` (the operator named it). Failing to reach the proxy is
``proxy_unreachable``, a 407 ``proxy_auth``, another non-2xx answer to CONNECT ``proxy_refused``.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from webgather.config.proxyspec import Proxy
from webgather.errors import ConnectFailed, DnsFailed, FetchError, FetchTimeout, ProtocolViolation, ProxyUnreachable
from webgather.fetch import h1
from webgather.fetch.h1_conn import Connection, PoolKey
from webgather.fetch.model import Headers
from webgather.fetch.proxy import check_answer, connect_request
from webgather.fetch.request import WireTarget
from webgather.fetch.resolver import Resolver

__all__ = ["Route", "open_tunnel", "proxy_errors", "route"]


@dataclass(frozen=True, slots=True)
class Route:
    key: PoolKey
    """Connections are kept per key: (scheme, host, port, address connected to, proxy identity)."""
    request_target: str
    """What follows GET: the path, or the absolute URI for a proxy."""
    proxy_headers: Headers
    proxy: Proxy | None
    tunnel: bool


async def route(target: WireTarget, origin_ip: str, proxy: Proxy | None, resolver: Resolver) -> Route:
    """Where ``target`` goes (``origin_ip``: the origin's address, already through the guard)."""
    if proxy is None:
        return Route((target.scheme, target.host, target.port, origin_ip, ""), target.path, (), None, False)
    with proxy_errors(proxy):
        proxy_ip = await resolver.resolve_trusted(proxy.host)
    ident = f"{proxy.port} {proxy.authorization or ''}"  # two accounts on one proxy: two sets of connections
    if target.scheme == "https":
        return Route(("https", target.host, target.port, proxy_ip, ident), target.path, (), proxy, True)
    auth = proxy.authorization
    headers: Headers = (("Proxy-Authorization", auth),) if auth else ()
    absolute = f"{target.scheme}://{target.host_header}{target.path}"
    return Route(("http", target.host, target.port, proxy_ip, ident), absolute, headers, proxy, False)


class _ConnectReply(asyncio.Protocol):
    """Reads the proxy's answer to CONNECT, then stops reading (TLS takes the connection over)."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[h1.ResponseHead] = asyncio.get_running_loop().create_future()
        self._head = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.answer.done():
            return
        self._head += data
        end = h1.head_end(self._head)
        try:
            if end < 0:
                if len(self._head) > h1.MAX_HEAD_BYTES:
                    raise ProtocolViolation("the proxy's answer to CONNECT: head over 64 KiB")
                return
            head = h1.parse_head(bytes(self._head[:end]))
            if 200 <= head.status < 300 and end != len(self._head):  # TLS: the client speaks first
                raise ProtocolViolation("bytes after the proxy's 2xx answer to CONNECT")
        except FetchError as exc:
            self.answer.set_exception(exc)
            return
        assert self._transport is not None
        self._transport.pause_reading()
        self.answer.set_result(head)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.answer.done():
            self.answer.set_exception(ProxyUnreachable("the proxy closed the connection before answering CONNECT"))


async def open_tunnel(key: PoolKey, proxy: Proxy, target: WireTarget, tls: ssl.SSLContext,
                      make: Callable[[], Connection], limit_s: float, local: tuple[str, int] | None) -> Connection:
    """A :class:`Connection` speaking TLS with the origin through a CONNECT tunnel, within ``limit_s``."""
    loop = asyncio.get_running_loop()
    transport: asyncio.BaseTransport | None = None
    phase = "proxy"
    try:
        async with asyncio.timeout(limit_s):
            with proxy_errors(proxy):
                transport, reply = await loop.create_connection(_ConnectReply, key[3], proxy.port, local_addr=local)
            transport.write(connect_request(target, proxy))
            head = await reply.answer
            check_answer(head.status, head.reason, proxy)
            phase, conn = "tls", make()
            with _tls_errors():
                secure = await loop.start_tls(transport, conn, tls, server_hostname=target.host)
            if secure is None:
                raise ConnectFailed("TLS through the tunnel: the connection closed")
    except TimeoutError:
        if transport is not None:
            transport.close()
        if phase == "tls":
            raise FetchTimeout(f"connect (TLS through {proxy.shown}) timed out after {limit_s:g} s") from None
        raise ProxyUnreachable(f"{proxy.shown}: no tunnel within {limit_s:g} s") from None
    except BaseException:
        if transport is not None:
            transport.close()
        raise
    conn.connection_made(secure)
    return conn


@contextmanager
def proxy_errors(proxy: Proxy) -> Iterator[None]:
    """The OS's failures to reach the proxy (and its name's) as ``proxy_unreachable``, naming the proxy."""
    try:
        yield
    except TimeoutError as exc:
        raise ProxyUnreachable(f"{proxy.shown}: connect timed out") from exc
    except DnsFailed as exc:
        raise ProxyUnreachable(f"{proxy.shown}: {exc}") from exc
    except (OSError, ValueError) as exc:
        raise ProxyUnreachable(f"{proxy.shown}: {' '.join(str(exc).split()) or type(exc).__name__}") from exc


@contextmanager
def _tls_errors() -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError) as exc:  # certificate, handshake (SSLError is an OSError)
        raise ConnectFailed(" ".join(str(exc).split()) or type(exc).__name__) from exc
