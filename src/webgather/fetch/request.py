"""What one GET puts on the wire, and what it has learnt so far. Pure.

Shared by both transports of :class:`webgather.fetch.http.HttpClient` (ours,
:mod:`webgather.fetch.h1_client`, and aiohttp's,
:mod:`webgather.fetch.via_aiohttp`), so they send, record and report alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from webgather.errors import FetchError, InvalidUrl, ProtocolViolation
from webgather.fetch import h1
from webgather.fetch.model import FetchResult, Headers
from webgather.urls import canonicalize

__all__ = ["Draft", "WireTarget", "as_sent", "clip", "extra_headers", "wire_target"]

MAX_DETAIL_CHARS = 200
_WIRE_READY = re.compile(r"https?://[!-~]+\Z")
"""ASCII, no spaces or controls: a canonical URL goes on the wire as it is."""
_PLAIN_TARGET = re.compile(r"(https?)://([a-z0-9.-]+)(?::([0-9]{1,5}))?([/?][!-\"$-~]*)?\Z")
"""A canonical URL with a plain host name or IPv4 address, an optional port and no credentials
or fragment: split by one regex, not by ``urlsplit`` (a request's share of a page's CPU)."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_BAD_VALUE = re.compile(r"[\r\n\0]")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class WireTarget:
    """A URL taken apart for the request line, the Host header and the connection."""

    url: str
    """As recorded (canonical; credentials, if any, dropped: never sent, logged or archived)."""
    scheme: str
    host: str
    """Lower-case; an IPv6 literal without brackets."""
    port: int
    host_header: str
    """``host[:port]`` with the port only when not the scheme's default (brackets for IPv6)."""
    path: str
    """Path and query: the request target."""


def wire_target(url: str) -> WireTarget:
    """The target of ``url``; :class:`InvalidUrl` if it is not an absolute http(s) URL."""
    plain = _plain_target(url) if isinstance(url, str) else None
    if plain is not None:
        return plain
    text = url if isinstance(url, str) else ""
    if not _WIRE_READY.match(text):
        text = canonicalize(text) or ""
    try:
        parts = urlsplit(text)
        host, port = parts.hostname or "", parts.port
    except ValueError as exc:
        raise InvalidUrl(f"{clip(str(url))!r}: {exc}") from None
    if parts.scheme not in _DEFAULT_PORTS or not host:
        raise InvalidUrl(f"not an absolute http(s) URL: {clip(str(url))!r}")
    if port == 0:  # no server listens on port 0 (urlsplit's callers often read it as "the default")
        raise InvalidUrl(f"port 0 in {clip(str(url))!r}")
    if "@" in parts.netloc:  # credentials are never sent: nor recorded (the log, the WARC)
        text = text.replace(parts.netloc, parts.netloc.rpartition("@")[2], 1)
    default = _DEFAULT_PORTS[parts.scheme]
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port in (None, default) else f"{shown}:{port}"
    path = parts.path or "/"
    if parts.query or text.endswith("?"):
        path += "?" + parts.query
    return WireTarget(text, parts.scheme, host, port or default, host_header, path)


def _plain_target(url: str) -> WireTarget | None:
    """The target of a URL :data:`_PLAIN_TARGET` matches, or None (then ``urlsplit`` decides)."""
    plain = _PLAIN_TARGET.match(url)
    if plain is None:
        return None
    scheme, host, port_text, path = plain.groups()
    default = _DEFAULT_PORTS[scheme]
    port = int(port_text) if port_text else default
    if not 0 < port <= 65535:  # out of range, or 0 (which urlsplit's caller sends to the default)
        return None
    host_header = f"{host}:{port}" if port != default else host
    return WireTarget(url, scheme, host, port, host_header, "/" + path if path and path[0] == "?" else path or "/")


def extra_headers(headers: Mapping[str, str] | None) -> Headers:
    """``headers`` as pairs; :class:`ProtocolViolation` for one that would break the request."""
    if not headers:
        return ()
    pairs = tuple((str(k), str(v)) for k, v in headers.items())
    for name, value in pairs:
        if not _TOKEN.match(name) or _BAD_VALUE.search(value):
            raise ProtocolViolation(f"refusing to send a malformed request header {clip(name)!r}")
    return pairs


def as_sent(target: WireTarget, base: Headers, extra: Headers) -> Headers:
    """The request headers in wire order (Host first); an extra header replaces a default in place."""
    merged = list(base)
    for name, value in extra:
        lower = name.lower()
        at = next((i for i, (k, _) in enumerate(merged) if k.lower() == lower), -1)
        if at >= 0:
            merged[at] = (name, value)
        else:
            merged.append((name, value))
    return (("Host", target.host_header), *merged)


@dataclass(slots=True)
class Draft:
    """What one fetch has learnt so far; becomes the FetchResult. A transport's sink."""

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
    queued_s: float = 0.0
    """Time the transport waited for a slot before the request went out (not counted in its timeout)."""
    settle_s: float = 0.0
    """Time spent watching a kept-alive connection for stray bytes after the response was whole: not the
    server's, so not in the result's ``elapsed_s`` (httpping's latencies read it)."""

    def on_head(self, head: h1.ResponseHead) -> None:
        self.status, self.reason, self.http_version = head.status, head.reason, head.version
        self.response_headers = head.headers

    def on_body(self, piece: bytes) -> int:
        self.chunks.append(piece)
        self.size += len(piece)
        if self.size > self.max_body_bytes:
            self.truncated = True
        return self.size

    def raw(self) -> bytes:
        raw = self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)
        self.chunks = [raw] if raw else []
        return raw[: self.max_body_bytes] if len(raw) > self.max_body_bytes else raw

    def forget_response(self) -> None:
        """Drop what arrived: it was a proxy's answer (a 407), not the origin's, and is not archived."""
        self.status, self.reason, self.response_headers = None, "", ()
        self.chunks, self.size, self.truncated = [], 0, False

    def fail(self, exc: FetchError) -> None:
        self.error = exc.kind
        self.error_detail = clip(str(exc) or type(exc).__name__)
        self.body = b""

    def result(self, started_at: float, elapsed_s: float) -> FetchResult:
        return FetchResult(
            url=self.url, started_at=started_at, elapsed_s=elapsed_s, status=self.status,
            reason=self.reason, http_version=self.http_version,
            request_headers=self.request_headers, response_headers=self.response_headers,
            raw_body=self.raw(), body=self.body, error=self.error, error_detail=self.error_detail,
            truncated=self.truncated, peer_ip=self.peer_ip,
        )  # fmt: skip


def clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL_CHARS else text[:MAX_DETAIL_CHARS] + "..."
