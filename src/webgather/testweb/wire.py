"""HTTP/1.1 bytes for the synthetic web's server: request heads in, responses out. Pure.

Only what a crawler's requests need: the request line, ``Host``,
``If-None-Match``, ``If-Modified-Since``, ``Accept-Encoding``,
``Connection`` and ``Content-Length`` (a request body is refused). A
:class:`Rendered` holds the ready bytes of one :class:`Response` (full
response, headers only for HEAD, a 304, a gzip variant built on first use),
so a warm request costs a dict lookup and one write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from http import HTTPStatus

from webgather.testweb.response import Response

__all__ = ["Rendered", "Request", "parse_head", "plain_response", "status_line"]

MAX_HEAD_BYTES = 16 * 1024
SERVER = "webgather-testweb"


def status_line(status: int) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    return f"HTTP/1.1 {status} {reason}\r\n".encode("ascii")


@dataclass(slots=True)
class Request:
    method: bytes
    target: bytes
    host: bytes
    """Lower-cased Host header ("" when absent)."""
    if_none_match: bytes = b""
    if_modified_since: bytes = b""
    accept_gzip: bool = False
    close: bool = False
    has_body: bool = False


def parse_head(head: bytes) -> Request | None:
    """Parse a request head (without the blank line); None when it is not HTTP/1.x."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return None
    request = Request(method=parts[0], target=parts[1], host=b"", close=parts[2] == b"HTTP/1.0")
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            return None
        name = name.strip().lower()
        value = value.strip()
        if name == b"host":
            request.host = value.lower()
        elif name == b"if-none-match":
            request.if_none_match = value
        elif name == b"if-modified-since":
            request.if_modified_since = value
        elif name == b"accept-encoding":
            request.accept_gzip = b"gzip" in value.lower()
        elif name == b"connection":
            token = value.lower()
            request.close = b"close" in token or (request.close and b"keep-alive" not in token)
        elif name in (b"content-length", b"transfer-encoding"):
            request.has_body = value not in (b"0", b"")
    return request


def plain_response(status: int, text: str, close: bool = False) -> bytes:
    body = text.encode()
    head = status_line(status) + (
        f"Server: {SERVER}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n"
    ).encode()
    return head + body


def _head(status: int, headers: tuple[tuple[str, str], ...], length: int, encoding: str | None) -> bytes:
    lines = [f"Server: {SERVER}"] + [f"{name}: {value}" for name, value in headers]
    if encoding is not None:
        lines.append(f"Content-Encoding: {encoding}")
    lines.append(f"Content-Length: {length}")
    return status_line(status) + ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Rendered:
    """The wire bytes of one :class:`Response`, built once and reused."""

    __slots__ = ("response", "full", "head_only", "_gzip", "_gzip_head", "not_modified", "size", "failure")

    def __init__(self, response: Response, retry_after_s: int) -> None:
        self.response = response
        body, encoding = response.wire_body(False)
        head = _head(response.status, response.headers, len(body), encoding)
        self.full = head + body
        self.head_only = head
        self._gzip: bytes | None = None
        self._gzip_head: bytes | None = None
        self.not_modified = self._not_modified(response)
        self.failure = self._failure(response, retry_after_s)
        self.size = len(self.full) + 64

    @staticmethod
    def _not_modified(response: Response) -> bytes | None:
        if response.etag is None and response.last_modified_s is None:
            return None
        keep = tuple((n, v) for n, v in response.headers if n in ("ETag", "Last-Modified"))
        lines = [f"Server: {SERVER}"] + [f"{n}: {v}" for n, v in keep]
        return status_line(304) + ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    @staticmethod
    def _failure(response: Response, retry_after_s: int) -> bytes | None:
        status = response.fail_status
        if not response.fail_attempts or status is None:
            return None
        extra = f"Retry-After: {retry_after_s}\r\n" if status in (429, 503) else ""
        body = b"try again later\n"
        return status_line(status) + (
            f"Server: {SERVER}\r\nContent-Type: text/plain\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    def payload(self, accept_gzip: bool, head_only: bool) -> bytes:
        """The response bytes for a client that does or does not accept gzip."""
        response = self.response
        if not (accept_gzip and response.compressible and response.content_encoding is None):
            return self.head_only if head_only else self.full
        if self._gzip is None:
            body, encoding = response.wire_body(True)
            self._gzip_head = _head(response.status, response.headers, len(body), encoding)
            self._gzip = self._gzip_head + body
            self.size += len(self._gzip)
        assert self._gzip_head is not None
        return self._gzip_head if head_only else self._gzip

    def is_not_modified(self, request: Request) -> bool:
        """RFC 9110 13.2.2: If-None-Match decides when present, else If-Modified-Since."""
        response = self.response
        if request.if_none_match and response.etag is not None:
            tags = [t.strip().removeprefix(b"W/") for t in request.if_none_match.split(b",")]
            return b"*" in tags or response.etag.encode() in tags
        if request.if_modified_since and response.last_modified_s is not None:
            try:
                since = parsedate_to_datetime(request.if_modified_since.decode("latin-1")).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                return False
            return math.floor(response.last_modified_s) <= since
        return False

