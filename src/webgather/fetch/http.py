"""One HTTP GET per call: ``await HttpClient.fetch(url) -> FetchResult``.

``fetch`` never raises for network or HTTP trouble: every failure is a
:class:`FetchResult` whose ``error`` is a :class:`webgather.errors.FetchError`
kind. Each transport translates its library's and the OS's exceptions in one
place.

How the pieces meet:

* :mod:`webgather.fetch.request` (pure) takes the URL apart, merges the
  request headers in wire order and collects the response (:class:`Draft`).
* The transport (``[fetch] http_client``) does the exchange: ``"native"``
  (default), our HTTP/1.1 client over asyncio protocols
  (:mod:`webgather.fetch.h1_client`), or ``"aiohttp"``
  (:mod:`webgather.fetch.via_aiohttp`). Both connect to the address from our
  :class:`Resolver` (static map, DNS cache) and keep Host and TLS SNI the
  URL's host; ``limit = concurrency`` connections, no per-host limit
  (politeness is the frontier's job), keep-alive on, no cookies, redirects not
  followed, nothing re-sent behind the retry policy (except, by the native
  transport, a GET that met a stale kept-alive connection: RFC 9112 9.3.1).
* Proxies (:mod:`webgather.fetch.proxy` picks one per URL, or none): http
  URLs go to the proxy in absolute form, https ones through a CONNECT tunnel
  with TLS to the origin; the origin's name is still resolved and judged by
  the guard first, the proxy's is exempt. ``request_headers`` stay the
  origin request's (no ``Proxy-Authorization``); a proxy's 407 is the
  failure ``proxy_auth``, never a response.
* ``raw_body`` is the body as sent (chunked framing removed), which the WARC
  stores; :func:`webgather.fetch.decode.decode_body` makes ``body`` under
  ``max_decoded_bytes`` (one budget for all the codings, at most three of
  them) before the fetch's ``total_timeout_s`` runs out. ``body`` is filled only when ``error`` is None: a
  truncated, too-large or bomb response keeps ``raw_body`` (the prefix, at
  most ``max_body_bytes``) for the archive and gives the parser nothing.
* Header names and values are decoded as UTF-8 with ``surrogateescape``:
  ``value.encode("utf-8", "surrogateescape")`` gives back the wire bytes.

Called by the node's fetch workers (``runtime``), also for robots.txt.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from types import TracebackType
from typing import Protocol

from webgather.config import FetchConfig
from webgather.config.proxyspec import Proxy
from webgather.errors import ConnectFailed, FetchError, FetchTimeout
from webgather.fetch.budget import BUDGET_PAGES, DecodeBudget
from webgather.fetch.decode import ACCEPT_ENCODING, Deadline, content_encoding, decode_body, needs_decoding
from webgather.fetch.model import FetchResult, Headers
from webgather.fetch.proxy import ProxyRouter, check_answer
from webgather.fetch.request import Draft, WireTarget, as_sent, extra_headers, wire_target
from webgather.fetch.resolver import Resolver
from webgather.clock import Clock

__all__ = ["ACCEPT", "HttpClient"]

ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


class _Transport(Protocol):
    async def exchange(self, target: WireTarget, extra: Headers, draft: Draft, proxy: Proxy | None = None) -> None: ...

    async def close(self) -> None: ...


class HttpClient:
    """GET one URL at a time, many at once; see the module docstring. Use ``async with``."""

    def __init__(self, config: FetchConfig, resolver: Resolver, clock: Clock, *, verify_tls: bool = True,
                 env: Mapping[str, str] | None = None) -> None:
        """``env`` (default ``os.environ``) is read for HTTP_PROXY and the like when the config names no proxy."""
        self._config = config
        self._router = ProxyRouter.from_config(config, os.environ if env is None else env)
        self._resolver = resolver
        self._clock = clock
        self._verify_tls = verify_tls
        self._transport: _Transport | None = None
        self._closed = False
        self.decoded = DecodeBudget(BUDGET_PAGES * config.max_decoded_bytes)
        """The node's decoded bytes in flight (one client per node)."""
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
        transport, self._transport = self._transport, None
        if transport is not None:
            await transport.close()

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        """GET ``url`` (no redirects followed). Never raises for network or HTTP problems.

        ``url`` should be canonical (the frontier's); one that cannot go on the
        wire as given (non-ASCII, spaces) is canonicalized first. ``result.url``
        is the URL requested.
        """
        started_at = self._clock.wall()
        start = self._clock.monotonic()
        draft = Draft(str(url), (), self._config.max_body_bytes)
        try:
            target = wire_target(url)
            draft.url = target.url
            extra = extra_headers(headers)
            draft.request_headers = as_sent(target, self._base_headers, extra)
            proxy = self._router.route(target)
            await self._open().exchange(target, extra, draft, proxy)
            if proxy is not None and target.scheme == "http" and draft.status == 407:  # the proxy's, not archived
                draft.forget_response()
                check_answer(407, "Proxy Authentication Required", proxy)
            kept = await self._decode(draft, start)
        except FetchError as exc:
            draft.fail(exc)
            kept = 0
        result = draft.result(started_at + draft.queued_s,
                              self._clock.monotonic() - start - draft.queued_s - draft.settle_s)
        self.decoded.hold_while_alive(result, kept)
        return result

    async def _decode(self, draft: Draft, start: float) -> int:
        """``draft.body``: the raw body with its content codings undone, within the node's budget of
        decoded bytes (:mod:`webgather.fetch.budget`); returns the bytes it keeps reserved."""
        encoding = content_encoding(draft.response_headers)
        raw, limit_s, reserve = draft.raw(), self._config.total_timeout_s, self._config.max_decoded_bytes
        if not needs_decoding(raw, encoding):
            draft.body = decode_body(raw, encoding, reserve)
            return 0
        waited = self._clock.monotonic()
        try:
            await asyncio.wait_for(self.decoded.reserve(reserve), limit_s)
        except TimeoutError:
            raise FetchTimeout(f"no room to decode within {limit_s:g} s: the node's decoded bytes in flight "
                               f"stay at {self.decoded.used} of {self.decoded.limit}") from None
        try:
            # the decode's CPU counts against total_timeout_s like the wait for the bytes did (not the wait for room)
            started = start + draft.queued_s + self._clock.monotonic() - waited
            deadline = Deadline(self._clock.monotonic, started + limit_s, limit_s)
            draft.body = decode_body(raw, encoding, reserve, deadline)
        except BaseException:
            self.decoded.release(reserve)
            raise
        self.decoded.release(reserve - len(draft.body))
        return len(draft.body)

    def _open(self) -> _Transport:
        if self._closed:
            raise ConnectFailed("the HTTP client is closed")
        if self._transport is None:
            if self._config.http_client == "aiohttp":
                from webgather.fetch.via_aiohttp import AiohttpTransport  # aiohttp only when chosen

                self._transport = AiohttpTransport(self._config, self._resolver, self._base_headers, self._verify_tls,
                                                   self._router.proxies)
            else:
                from webgather.fetch.h1_client import NativeTransport

                self._transport = NativeTransport(self._config, self._resolver, self._verify_tls)
        return self._transport
