"""One HTTP GET per call, over one aiohttp session: ``await HttpClient.fetch(url) -> FetchResult``.

``fetch`` never raises for network or HTTP trouble: every failure is a
:class:`FetchResult` whose ``error`` is a :class:`webgather.errors.FetchError`
kind. aiohttp's and the OS's exceptions are translated in exactly one place,
:func:`map_transport_errors`.

How the pieces meet:

* The connection goes to the address from our :class:`Resolver` (static map,
  DNS cache) through :class:`_AiohttpResolver`, so ``Host`` and TLS SNI stay the
  URL's host. aiohttp's own DNS cache is off: ours is the only one.
* One ``TCPConnector``: ``limit = concurrency``, no per-host limit (politeness is
  the frontier's job), keep-alive on, no cookies, redirects not followed.
* ``auto_decompress=False``: ``raw_body`` is the body as sent (chunked framing
  removed), which the WARC stores; :func:`webgather.fetch.decode.decode_body`
  makes ``body`` under ``max_decoded_bytes``.
* ``body`` is filled only when ``error`` is None: a truncated, too-large or
  bomb response keeps ``raw_body`` (the prefix, at most ``max_body_bytes``)
  for the archive and gives the parser nothing.
* Header names and values are decoded as aiohttp does (UTF-8 with
  ``surrogateescape``): ``value.encode("utf-8", "surrogateescape")`` gives back
  the wire bytes exactly.

Called by the node's fetch workers (``runtime``), also for robots.txt.
"""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.http_exceptions import ContentLengthError, HttpProcessingError, TransferEncodingError
from yarl import URL

from webgather.config import FetchConfig
from webgather.errors import (
    BodyTooLarge,
    ConnectFailed,
    ConnectionReset,
    DnsFailed,
    FetchError,
    FetchTimeout,
    InvalidUrl,
    ProtocolViolation,
    TruncatedBody,
)
from webgather.fetch.decode import ACCEPT_ENCODING, decode_body
from webgather.fetch.model import FetchResult, Headers
from webgather.fetch.resolver import Resolver
from webgather.runtime.clock import Clock
from webgather.urls import canonicalize

__all__ = ["ACCEPT", "HttpClient", "map_transport_errors"]

ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
_MAX_DETAIL_CHARS = 200
_WIRE_READY = re.compile(r"https?://[!-~]+\Z")
"""ASCII, no spaces or controls: a canonical URL goes on the wire as it is."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_BAD_VALUE = re.compile(r"[\r\n\0]")


class _AiohttpResolver(AbstractResolver):
    """aiohttp's resolver seam, answered from our :class:`Resolver`."""

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
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


@dataclass(slots=True)
class _Draft:
    """What one fetch has learnt so far; becomes the FetchResult."""

    url: str
    request_headers: Headers
    max_body_bytes: int
    status: int | None = None
    reason: str = ""
    http_version: str = "1.1"
    response_headers: Headers = ()
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    body: bytes = b""
    error: str | None = None
    error_detail: str = ""
    truncated: bool = False
    peer_ip: str | None = None

    def fail(self, exc: FetchError) -> None:
        self.error = exc.kind
        self.error_detail = _clip(str(exc) or type(exc).__name__)
        self.body = b""

    def result(self, started_at: float, elapsed_s: float) -> FetchResult:
        raw = self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)
        if len(raw) > self.max_body_bytes:
            raw = raw[: self.max_body_bytes]
        return FetchResult(
            url=self.url, started_at=started_at, elapsed_s=elapsed_s, status=self.status,
            reason=self.reason, http_version=self.http_version,
            request_headers=self.request_headers, response_headers=self.response_headers,
            raw_body=raw, body=self.body, error=self.error, error_detail=self.error_detail,
            truncated=self.truncated, peer_ip=self.peer_ip,
        )  # fmt: skip


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


class HttpClient:
    """GET one URL at a time, many at once; see the module docstring. Use ``async with``."""

    def __init__(self, config: FetchConfig, resolver: Resolver, clock: Clock, *, verify_tls: bool = True) -> None:
        self._config = config
        self._resolver = resolver
        self._clock = clock
        self._verify_tls = verify_tls
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._base_headers: Headers = (
            ("User-Agent", config.user_agent),
            ("Accept", ACCEPT),
            ("Accept-Encoding", ACCEPT_ENCODING),
        )

    async def __aenter__(self) -> HttpClient:
        self._open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection; later fetches fail with ``connect``."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        """GET ``url`` (no redirects followed). Never raises for network or HTTP problems.

        ``url`` should be canonical (the frontier's); one that cannot go on the
        wire as given (non-ASCII, spaces) is canonicalized first. ``result.url``
        is the URL requested.
        """
        started_at = self._clock.wall()
        start = self._clock.monotonic()
        draft = _Draft(str(url), self._base_headers, self._config.max_body_bytes)
        try:
            draft.url, target = _target(url)
            extra = _extra_headers(headers)
            with map_transport_errors(lambda: draft.status is not None):
                await self._exchange(target, extra, draft)
        except FetchError as exc:
            draft.fail(exc)
        return draft.result(started_at, self._clock.monotonic() - start)

    def _open(self) -> aiohttp.ClientSession:
        if self._closed:
            raise ConnectFailed("the HTTP client is closed")
        if self._session is None:
            config = self._config
            connector = aiohttp.TCPConnector(
                limit=config.concurrency,
                limit_per_host=0,
                use_dns_cache=False,
                resolver=_AiohttpResolver(self._resolver),
                ssl=self._verify_tls,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=config.total_timeout_s, sock_connect=config.connect_timeout_s),
                auto_decompress=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
                headers=self._base_headers,
            )
            # aiohttp silently re-sends an idempotent request once when a reused connection
            # drops (RFC 9112 9.3.1 allows it). Our retry policy owns retries, with backoff and
            # politeness; an immediate hidden second request would break both. No public knob.
            self._session._retry_connection = False
        return self._session

    async def _exchange(self, target: URL, extra: Headers, draft: _Draft) -> None:
        session = self._open()
        draft.request_headers = _as_sent(target, self._base_headers, extra)
        draft.peer_ip = await self._resolver.resolve(target.raw_host or "")
        response = await session.get(target, headers=extra or None, allow_redirects=False)
        unwatch = _fail_body_on_disconnect(response)
        try:
            _take_head(response, draft)
            await self._read_body(response, draft)
        except BaseException:
            response.close()  # do not reuse a connection whose body was not read to its end
            raise
        finally:
            unwatch()
        response.release()
        raw = draft.chunks[0] if len(draft.chunks) == 1 else b"".join(draft.chunks)
        draft.chunks = [raw]
        draft.body = decode_body(raw, response.headers.get("Content-Encoding"), self._config.max_decoded_bytes)

    async def _read_body(self, response: aiohttp.ClientResponse, draft: _Draft) -> None:
        limit = self._config.max_body_bytes
        content = response.content
        while True:
            chunk = await content.readany()
            if not chunk:
                return
            draft.chunks.append(chunk)
            draft.size += len(chunk)
            if draft.size > limit:
                draft.truncated = True
                raise BodyTooLarge(f"body over max_body_bytes={limit}; kept the first {limit} bytes")
            if content.at_eof():  # spares one more read for the common one-chunk body
                return


def _take_head(response: aiohttp.ClientResponse, draft: _Draft) -> None:
    connection = response.connection
    transport = connection.transport if connection is not None else None
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


def _fail_body_on_disconnect(response: aiohttp.ClientResponse) -> Callable[[], None]:
    """Wake a body read stuck on a connection that is gone.

    aiohttp 3.14's C parser, on broken chunk framing after the head, closes the
    connection but never fails the body stream, so a reader would wait for
    total_timeout_s. When the connection closes and the body has neither ended
    nor failed, fail it (it becomes ``truncated``).
    """
    connection = response.connection
    protocol = connection.protocol if connection is not None else None
    closed = protocol.closed if protocol is not None else None  # (a protocol with no data is falsy)
    if protocol is None or closed is None:
        return _nothing
    content = response.content

    def on_closed(future: asyncio.Future[None]) -> None:
        if not future.cancelled():
            future.exception()  # mark retrieved: the body read reports it
        if not content.is_eof() and content.exception() is None:
            cause = protocol.exception()
            content.set_exception(aiohttp.ClientPayloadError(f"connection closed mid-body: {cause}"))

    def unwatch() -> None:
        closed.remove_done_callback(on_closed)

    closed.add_done_callback(on_closed)
    return unwatch


def _nothing() -> None:
    return None


def _target(url: str) -> tuple[str, URL]:
    """The URL to record and the yarl URL to request; :class:`InvalidUrl` if there is none."""
    text = url if isinstance(url, str) else ""
    if not _WIRE_READY.match(text):
        text = canonicalize(text) or ""
    try:  # yarl parses lazily: a bad port or IPv6 literal shows on first access
        target = URL(text, encoded=True)
        ok = target.scheme in ("http", "https") and bool(target.raw_host) and target.port is not None
        if ok and (target.raw_user is not None or target.raw_password is not None):
            target = target.with_user(None)  # never send credentials found in a link
    except ValueError as exc:
        raise InvalidUrl(f"{_clip(str(url))!r}: {exc}") from None
    if not ok:
        raise InvalidUrl(f"not an absolute http(s) URL: {_clip(str(url))!r}")
    return text, target


def _extra_headers(headers: Mapping[str, str] | None) -> Headers:
    if not headers:
        return ()
    pairs = tuple((str(k), str(v)) for k, v in headers.items())
    for name, value in pairs:
        if not _TOKEN.match(name) or _BAD_VALUE.search(value):
            raise ProtocolViolation(f"refusing to send a malformed request header {_clip(name)!r}")
    return pairs


def _as_sent(target: URL, base: Headers, extra: Headers) -> Headers:
    """The request headers in wire order, as aiohttp merges and sends them (Host first)."""
    merged = list(base)
    for name, value in extra:
        lower = name.lower()
        at = next((i for i, (k, _) in enumerate(merged) if k.lower() == lower), -1)
        if at >= 0:
            merged[at] = (name, value)  # aiohttp keeps the default's place, takes the new spelling
        else:
            merged.append((name, value))
    return (("Host", target.host_port_subcomponent or ""), *merged)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_DETAIL_CHARS else text[:_MAX_DETAIL_CHARS] + "..."
