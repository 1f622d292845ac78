"""The aiohttp transport of :class:`webgather.fetch.http.HttpClient` (``[fetch] http_client = "aiohttp"``).

The crawler's transport before :mod:`webgather.fetch.h1_client`, kept as the
reference the integration tests hold both to, and as the choice for whoever
prefers aiohttp's client on the wire. One ``ClientSession``: ``limit =
concurrency``, no per-host limit (politeness is the frontier's job),
keep-alive on, no cookies, redirects not followed, ``auto_decompress=False``.
Connections go to the address from our :class:`Resolver` through
:class:`_AiohttpResolver` (aiohttp's own DNS cache is off), so ``Host`` and
TLS SNI stay the URL's host. aiohttp's and the OS's exceptions are translated
in one place, :func:`map_transport_errors` (a proxy's, :func:`_proxy_errors`).

Through a proxy (``proxy=``: aiohttp sends http URLs in absolute form and
tunnels https ones with CONNECT; ``Proxy-Authorization`` goes in the request
or in ``proxy_headers``, see :func:`_proxy_request`) the origin's address is
still resolved and judged by our resolver before the request; the proxy's
host is resolved by :meth:`Resolver.resolve_trusted` (no guard).
"""

from __future__ import annotations

import asyncio
import select
import socket
from contextvars import ContextVar
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_proto import ResponseHandler
from aiohttp.http_exceptions import ContentLengthError, HttpProcessingError, TransferEncodingError
from yarl import URL

from webgather.config import FetchConfig
from webgather.config.proxyspec import Proxy
from webgather.errors import (
    BodyTooLarge,
    ConnectFailed,
    ConnectionReset,
    DnsFailed,
    FetchError,
    FetchTimeout,
    InvalidUrl,
    ProtocolViolation,
    ProxyRefused,
    ProxyUnreachable,
    TruncatedBody,
)
from webgather.fetch import h1
from webgather.fetch.model import Headers
from webgather.fetch.proxy import check_answer
from webgather.fetch.h1_conn import MAX_INTERIM
from webgather.fetch.request import Draft, WireTarget
from webgather.fetch.resolver import Resolver

__all__ = ["AiohttpTransport", "map_transport_errors"]

SETTLE_S = 0.005
"""As :data:`webgather.fetch.h1_client.SETTLE_S`: a response on a kept-alive connection is watched this
long for bytes no request accounts for before it is handed on."""


def _unaccounted(protocol: ResponseHandler | None) -> bool:
    """``protocol`` holds a response nobody asked for, failed to parse bytes, or its socket holds
    bytes the event loop has not read yet: its framing is in doubt."""
    if protocol is None:
        return False
    if len(protocol) or protocol.exception() is not None:
        return True
    transport = protocol.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


_KEPT: ContextVar[ResponseHandler | None] = ContextVar("_KEPT", default=None)
"""The kept-alive connection the current request went out on (None: a new one)."""


def _keeps_alive(response: aiohttp.ClientResponse) -> bool:
    """The response leaves its connection open for another (then bytes after it are stray): not
    ``Connection: close``, not an HTTP/1.0 one without keep-alive, not close-delimited."""
    tokens = {t.strip().lower() for t in response.headers.get("Connection", "").split(",")}
    version = response.version
    persistent = "keep-alive" in tokens if version is not None and version < (1, 1) else "close" not in tokens
    return persistent and not (_close_delimited(response) and response.status not in (204, 304))


class _Response(aiohttp.ClientResponse):
    """aiohttp's response, reading at most :data:`MAX_INTERIM` informational (1xx) heads before the
    final one (aiohttp reads them without a count: a ``102 Processing`` flood ran to the total timeout)."""

    async def start(self, connection: Any) -> Any:
        protocol = connection.protocol
        read, heads = protocol.read, 0

        async def counted() -> Any:
            nonlocal heads
            heads += 1
            if heads > MAX_INTERIM + 1:
                raise ProtocolViolation(f"over {MAX_INTERIM} informational (1xx) responses before the response")
            return await read()

        protocol.read = counted
        try:
            return await super().start(connection)
        finally:
            del protocol.read


class _Connector(aiohttp.TCPConnector):
    """aiohttp's connector, which never hands out an idle connection with bytes waiting on it (aiohttp
    would read them as the answer to the next request), and tells the request (:data:`_KEPT`) which
    kept-alive connection it got. ``_get`` is aiohttp's private seam (3.9 to 3.14)."""

    async def _get(self, key: Any, traces: Any) -> Any:
        while True:
            conn = await super()._get(key, traces)
            if conn is None or not _unaccounted(conn.protocol):
                _KEPT.set(conn.protocol if conn is not None else None)
                return conn
            conn.close()


class _AiohttpResolver(AbstractResolver):
    """aiohttp's resolver seam, answered from our :class:`Resolver`."""

    def __init__(self, resolver: Resolver, trusted: frozenset[str] = frozenset()) -> None:
        self._resolver = resolver
        self._trusted = trusted
        """The configured proxies' hosts: aiohttp resolves only those when it goes through a proxy
        (the origin's address was checked by the guard before the request)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            if host in self._trusted:
                address = await self._resolver.resolve_trusted(host)
            else:
                address = await self._resolver.resolve(host)
        except DnsFailed as exc:  # aiohttp turns an OSError here into ClientConnectorDNSError
            raise OSError(str(exc)) from exc
        inet = socket.AF_INET6 if ":" in address else socket.AF_INET
        flags = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
        return [
            ResolveResult(hostname=host, host=address, port=port, family=inet, proto=0, flags=flags)
        ]

    async def close(self) -> None:
        return None


class AiohttpTransport:
    """One aiohttp session; ``exchange`` fills a :class:`Draft` or raises a :class:`FetchError`."""

    def __init__(self, config: FetchConfig, resolver: Resolver, base_headers: Headers, verify_tls: bool,
                 proxies: frozenset[Proxy] = frozenset()) -> None:
        connector = _Connector(
            limit=config.concurrency, limit_per_host=0, use_dns_cache=False,
            resolver=_AiohttpResolver(resolver, frozenset(p.host for p in proxies)), ssl=verify_tls,
            local_addr=(config.source_address, 0) if config.source_address else None,
        )  # fmt: skip
        self._connector = connector
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=config.total_timeout_s, sock_connect=config.connect_timeout_s),
            auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False, headers=base_headers,
            response_class=_Response,
        )  # fmt: skip
        # aiohttp silently re-sends an idempotent request once when a reused connection
        # drops (RFC 9112 9.3.1 allows it). Our retry policy owns retries, with backoff and
        # politeness; an immediate hidden second request would break both. No public knob.
        # (It also re-sends on a NEW connection and after part of a response head; our native
        # transport re-sends only on a reused connection with no response byte: h1_client.)
        self._session._retry_connection = False
        self._resolver = resolver
        self._slots = asyncio.Semaphore(config.concurrency)
        """Requests under way: the total timeout (aiohttp's, from ``get``) starts once one is held."""

    async def close(self) -> None:
        await self._session.close()

    async def exchange(self, target: WireTarget, extra: Headers, draft: Draft, proxy: Proxy | None = None) -> None:
        loop = asyncio.get_running_loop()
        queued_at = loop.time()
        async with self._slots:
            draft.queued_s = loop.time() - queued_at
            with map_transport_errors(lambda: draft.status is not None), _proxy_errors(proxy):
                draft.peer_ip = await self._resolver.resolve(target.host)
                url = URL(f"{target.scheme}://{target.host_header}{target.path}", encoded=True)
                headers, via, via_headers = _proxy_request(target, extra, proxy)
                _KEPT.set(None)
                response = await self._session.get(url, headers=headers, allow_redirects=False,
                                                   proxy=via, proxy_headers=via_headers)
                await self._read(response, draft, proxy is not None)

    async def _read(self, response: aiohttp.ClientResponse, draft: Draft, proxied: bool) -> None:
        """The head and body of ``response`` into ``draft``; then, on a kept-alive connection, a settle
        (see :data:`SETTLE_S`): a response followed by stray bytes is dropped, ``reset``."""
        kept = _KEPT.get()  # (aiohttp may have released the connection already: a short body came whole)
        unwatch, cut = _fail_body_on_disconnect(response)
        try:
            _take_head(response, draft, proxied=proxied)
            await _read_body(response, draft)
            if cut() and _close_delimited(response):
                raise TruncatedBody("connection reset before the end of a close-delimited body")
            if kept is not None and _keeps_alive(response):
                settling_at = asyncio.get_running_loop().time()
                await asyncio.sleep(SETTLE_S)
                draft.settle_s = asyncio.get_running_loop().time() - settling_at
                if self._still_ours(kept, response) and _unaccounted(kept):
                    kept.close()
                    draft.forget_response()
                    raise ConnectionReset("bytes after the response on a kept-alive connection: its framing is in doubt")
        except BaseException:
            response.close()  # do not reuse a connection whose body was not read to its end
            raise
        finally:
            unwatch()
        response.release()


    def _still_ours(self, protocol: ResponseHandler, response: aiohttp.ClientResponse) -> bool:
        """``protocol`` is this response's connection, or idle: not one another request took meanwhile."""
        return response.connection is not None or protocol not in self._connector._acquired


def _close_delimited(response: aiohttp.ClientResponse) -> bool:
    """The body ends when the connection does (no Content-Length, not chunked)."""
    return "Content-Length" not in response.headers and "chunked" not in response.headers.get("Transfer-Encoding", "")


async def _read_body(response: aiohttp.ClientResponse, draft: Draft) -> None:
    limit = draft.max_body_bytes
    content = response.content
    while True:
        chunk = await content.readany()
        if not chunk:
            return
        if draft.on_body(chunk) > limit:
            raise BodyTooLarge(f"body over max_body_bytes={limit}; kept the first {limit} bytes")
        if content.at_eof():  # spares one more read for the common one-chunk body
            return


def _take_head(response: aiohttp.ClientResponse, draft: Draft, *, proxied: bool = False) -> None:
    _check_head_size(response)  # before anything is recorded: a refused head is no response
    connection = response.connection
    # through a proxy the peer is the proxy: WARC-IP-Address stays the origin's, as resolved by us
    transport = connection.transport if connection is not None and not proxied else None
    peer = transport.get_extra_info("peername") if transport is not None else None
    if peer:  # the address actually connected to (a kept-alive connection may predate a DNS change)
        draft.peer_ip = str(peer[0])
    draft.status = response.status
    draft.reason = response.reason or ""
    version = response.version
    if version is not None:
        draft.http_version = f"{version.major}.{version.minor}"
    draft.response_headers = tuple(
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
        for name, value in response.raw_headers
    )


def _check_head_size(response: aiohttp.ClientResponse) -> None:
    """Hold aiohttp's response to our transport's head limits (:mod:`webgather.fetch.h1`).

    aiohttp caps each line (8,190 bytes) and the field count (128 by
    default since 3.13.4), not the head's total, so we count: the fields as
    parsed (":", " " and CRLF each), the status line, the blank line.
    """
    fields = response.raw_headers
    if len(fields) > h1.MAX_FIELDS:
        raise ProtocolViolation(f"over {h1.MAX_FIELDS} header fields")
    size = sum(len(name) + len(value) + 4 for name, value in fields) + len(response.reason or "") + 17
    if size > h1.MAX_HEAD_BYTES:
        raise ProtocolViolation("response head over 64 KiB")


@contextmanager
def map_transport_errors(headers_received: Callable[[], bool]) -> Iterator[None]:
    """Translate aiohttp/OS exceptions into :class:`FetchError` kinds: the only such place.

    ``headers_received()`` tells a broken connection before the response
    (``reset``) from one during the body (``truncated``).
    """
    try:
        yield
    except FetchError:
        raise
    except TimeoutError as exc:  # aiohttp's ServerTimeoutError and friends are TimeoutErrors too
        raise FetchTimeout(_text(exc, "timed out")) from exc
    except aiohttp.ClientConnectorDNSError as exc:
        raise DnsFailed(_text(exc.os_error, "does not resolve")) from exc
    except aiohttp.ClientConnectorError as exc:
        raise ConnectFailed(_text(exc.os_error, "cannot connect")) from exc
    except aiohttp.ClientPayloadError as exc:
        raise TruncatedBody(_text(exc, "body incomplete")) from exc
    except aiohttp.ClientResponseError as exc:  # the response parser rejected what came
        if _is_framing_error(exc):  # head and broken body arrived in one read
            raise TruncatedBody(_text(exc, "broken body framing")) from exc
        raise ProtocolViolation(_text(exc.message, "malformed response")) from exc
    except (TransferEncodingError, ContentLengthError) as exc:  # pure-Python parser, mid-body
        raise TruncatedBody(_text(exc, "broken body framing")) from exc
    except HttpProcessingError as exc:
        raise ProtocolViolation(_text(exc, "malformed response")) from exc
    except aiohttp.InvalidURL as exc:
        raise InvalidUrl(_text(exc, "invalid URL")) from exc
    except (aiohttp.ClientConnectionError, OSError) as exc:  # disconnected, reset, broken pipe
        if headers_received():
            raise TruncatedBody(_text(exc, "connection lost during the body")) from exc
        raise ConnectionReset(_text(exc, "connection closed before a response")) from exc
    except aiohttp.ClientError as exc:
        raise ProtocolViolation(_text(exc, type(exc).__name__)) from exc


def _proxy_request(target: WireTarget, extra: Headers,
                   proxy: Proxy | None) -> tuple[dict[str, str] | None, URL | None, dict[str, str] | None]:
    """(request headers, proxy URL, CONNECT headers). ``Proxy-Authorization`` goes in the request
    to the proxy for an http URL, in the CONNECT for an https one (aiohttp's BasicAuth is deprecated)."""
    headers = dict(extra) if extra else None
    if proxy is None:
        return headers, None, None
    auth = proxy.authorization
    if auth is None:
        return headers, URL(proxy.shown), None
    if target.scheme == "https":
        return headers, URL(proxy.shown), {"Proxy-Authorization": auth}
    return {**(headers or {}), "Proxy-Authorization": auth}, URL(proxy.shown), None


@contextmanager
def _proxy_errors(proxy: Proxy | None) -> Iterator[None]:
    """aiohttp's proxy failures as ``proxy_unreachable``, ``proxy_auth`` or ``proxy_refused``.

    Through a proxy, every connection aiohttp opens goes to the proxy, so a
    connect timeout or a failed lookup is the proxy's (the origin's name was
    resolved by us, before)."""
    try:
        yield
    except aiohttp.ClientHttpProxyError as exc:  # CONNECT answered with a non-2xx
        assert proxy is not None
        check_answer(exc.status, exc.message, proxy)
        raise ProxyRefused(f"{proxy.shown} answered CONNECT with {exc.status}") from exc
    except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
        if proxy is None:
            raise
        cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else "connect timed out"
        raise ProxyUnreachable(f"{proxy.shown}: {_text(cause, 'cannot connect')}") from exc


def _is_framing_error(exc: aiohttp.ClientResponseError) -> bool:
    """Broken chunking or Content-Length, seen by the C parser (message) or the Python one (type)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, (TransferEncodingError, ContentLengthError)):
            return True
        cause = cause.__cause__
    return "chunk" in exc.message.lower()  # the message only: str(exc) holds the URL too


def _text(exc: BaseException | str | None, fallback: str) -> str:
    text = str(exc) if exc is not None else ""
    return " ".join(text.split()) or fallback


def _fail_body_on_disconnect(response: aiohttp.ClientResponse) -> tuple[Callable[[], None], Callable[[], bool]]:
    """Wake a body read stuck on a connection that is gone; (unwatch, cut): ``cut()`` tells whether
    the connection has ended with an error (a reset), which a close-delimited body cannot tell.

    aiohttp 3.14's C parser, on broken chunk framing after the head, closes the
    connection but never fails the body stream, so a reader would wait for
    total_timeout_s. When the connection closes and the body has neither ended
    nor failed, fail it (it becomes ``truncated``).
    """
    connection = response.connection
    protocol = connection.protocol if connection is not None else None
    closed = protocol.closed if protocol is not None else None  # (a protocol with no data is falsy)
    if protocol is None or closed is None:
        return _nothing, _no
    content = response.content

    def on_closed(future: asyncio.Future[None]) -> None:
        if not future.cancelled():
            future.exception()  # mark retrieved: the body read reports it
        if not content.is_eof() and content.exception() is None:
            cause = protocol.exception()
            content.set_exception(aiohttp.ClientPayloadError(f"connection closed mid-body: {cause}"))

    def unwatch() -> None:
        closed.remove_done_callback(on_closed)

    def cut() -> bool:
        return closed.done() and not closed.cancelled() and closed.exception() is not None

    closed.add_done_callback(on_closed)
    return unwatch, cut


def _nothing() -> None:
    return None


def _no() -> bool:
    return False
