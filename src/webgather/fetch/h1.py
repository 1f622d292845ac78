"""HTTP/1.1 on the wire, as pure functions: the request's bytes, the response head, body framing.

No IO: :mod:`webgather.fetch.h1_conn` feeds these from a socket. What they
accept is what crawlers meet (RFC 9112 with the usual leniency): bare ``LF``
line ends, obsolete line folding, a repeated identical Content-Length; what
they refuse raises :class:`ProtocolViolation` (the head) or
:class:`TruncatedBody` (broken chunk framing), never anything else.

Limits follow aiohttp's defaults, which the crawler used before: a head line
(status or one field) of at most 8,190 bytes, a head of at most 64 KiB
(blank line included, however the bytes arrived), and at most
:data:`MAX_FIELDS` header fields, as Python's ``http.client`` and Apache's
``LimitRequestFields`` allow (aiohttp allows 128).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from webgather.errors import ProtocolViolation, TruncatedBody
from webgather.fetch.model import Headers

__all__ = [
    "MAX_FIELDS", "MAX_HEAD_BYTES", "Chunked", "ResponseHead", "head_end", "parse_head", "read_head",
    "request_bytes",
]  # fmt: skip

MAX_HEAD_BYTES = 64 * 1024
MAX_LINE_BYTES = 8190
MAX_FIELDS = 100
MAX_LENGTH_DIGITS = 18
"""A Content-Length of more digits is refused before conversion (10**18 bytes is past any limit; a
5,000-digit one made ``int`` raise ValueError, not a protocol error)."""
_STATUS_LINE = re.compile(rb"HTTP/(\d)\.(\d) (\d{3})(?: (.*))?\Z", re.DOTALL)
_FIELD_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_PLAIN_FIELDS = re.compile(rf"(?:{_TOKEN}:[^\n]*\n)*\r?\n\Z")
"""A head's field lines as almost every server sends them: no folding, no stray line."""
_PLAIN_FIELD = re.compile(rf"({_TOKEN}):[ \t]*([^\n]*?)[ \t]*\r?\n")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;.*)?\Z", re.DOTALL)

LENGTH, CHUNKED, UNTIL_CLOSE, NO_BODY = "length", "chunked", "close", "none"


@dataclass(frozen=True, slots=True)
class ResponseHead:
    status: int
    reason: str
    version: str
    """``"1.1"`` or ``"1.0"``."""
    headers: Headers
    framing: str
    """How the body ends: LENGTH (``length`` bytes), CHUNKED, UNTIL_CLOSE or NO_BODY."""
    length: int
    keep_alive: bool
    """The connection may carry another request once this body is read."""


def request_bytes(path: str, headers: Headers) -> bytes:
    """``GET path HTTP/1.1`` and ``headers`` in their order (Host first, by the caller)."""
    lines = [f"GET {path} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in headers]
    lines.append("\r\n")
    return "\r\n".join(lines).encode("utf-8", "surrogateescape")


def head_end(buffer: bytes | bytearray, start: int = 0) -> int:
    """Index just past the blank line that ends a head in ``buffer``, looking from ``start``, or -1."""
    crlf = buffer.find(b"\r\n\r\n", start)
    lf = buffer.find(b"\n\n", start, crlf if crlf >= 0 else len(buffer))  # bare-LF heads are rare
    if lf >= 0:
        return lf + 2
    return crlf + 4 if crlf >= 0 else -1


def parse_head(raw: bytes) -> ResponseHead:
    """The status line and fields of ``raw`` (a whole head, its blank line included)."""
    head, problem = read_head(raw)
    if problem:
        raise ProtocolViolation(problem)
    return head


def read_head(raw: bytes) -> tuple[ResponseHead, str]:
    """As :func:`parse_head`, but a head whose status line and fields are sound and whose framing is
    not (a bad Content-Length) comes back with the problem, for the archive: (head with no body and
    no keep-alive, problem); "" when sound."""
    if len(raw) > MAX_HEAD_BYTES:
        raise ProtocolViolation("response head over 64 KiB")
    if b"\0" in raw or raw.count(b"\r") != raw.count(b"\r\n"):  # RFC 9110 5.5: reject, or replace
        raise ProtocolViolation("a NUL or a bare CR in the response head")
    first, _, block = raw.partition(b"\n")
    status_line = first.rstrip(b"\r")
    if len(status_line) > MAX_LINE_BYTES:
        raise ProtocolViolation("status line over 8190 bytes")
    match = _STATUS_LINE.match(status_line)
    if match is None:
        raise ProtocolViolation(f"not an HTTP/1.x status line: {_show(status_line)}")
    major, minor, status = int(match[1]), int(match[2]), int(match[3])
    if major != 1 or status < 100:
        raise ProtocolViolation(f"unsupported status line: {_show(status_line)}")
    headers = _plain_fields(block) or _fields(block.split(b"\n"))
    reason = (match[4] or b"").decode("utf-8", "surrogateescape").strip()
    fields = _framing_fields(headers)
    try:
        framing, length, reusable = _framing(status, fields)
    except ProtocolViolation as exc:
        return ResponseHead(status, reason, f"1.{minor}", headers, NO_BODY, 0, False), str(exc)
    keep_alive = reusable and _persistent(minor, fields)
    return ResponseHead(status, reason, f"1.{minor}", headers, framing, length, keep_alive), ""


def _plain_fields(block: bytes) -> Headers | None:
    """The fields of ``block`` (the head past its status line) by two C-level regex passes, or
    None (then :func:`_fields` reads it line by line): none, too many, a long line, folding or junk."""
    if len(block) > MAX_LINE_BYTES:  # no line can be longer than the block
        return None
    # a whole-block decode, as the per-line path decodes each piece: the splits are at ASCII bytes
    text = block.decode("utf-8", "surrogateescape")
    if not _PLAIN_FIELDS.match(text):
        return None
    fields = _PLAIN_FIELD.findall(text)
    return tuple(fields) if 0 < len(fields) <= MAX_FIELDS else None


def _fields(lines: list[bytes]) -> Headers:
    fields: list[list[bytes]] = []
    for line in lines:
        line = line.rstrip(b"\r")
        if not line:
            continue
        if len(line) > MAX_LINE_BYTES:
            raise ProtocolViolation("a header field over 8190 bytes")
        if line[:1] in (b" ", b"\t"):  # obsolete line folding: part of the previous value
            if not fields:
                raise ProtocolViolation("a folded line before any header field")
            fields[-1][1] += b" " + line.strip()
            continue
        name, colon, value = line.partition(b":")
        if not colon or not _FIELD_NAME.match(name):
            raise ProtocolViolation(f"malformed header field: {_show(line)}")
        if len(fields) == MAX_FIELDS:
            raise ProtocolViolation(f"over {MAX_FIELDS} header fields")
        fields.append([name, value.strip(b" \t")])
    return tuple((_text(name), _text(value)) for name, value in fields)


def _framing_fields(headers: Headers) -> dict[str, list[str]]:
    """The values of the fields that decide framing and persistence, by lower-case name (one pass)."""
    fields: dict[str, list[str]] = {"transfer-encoding": [], "content-length": [], "connection": []}
    for name, value in headers:
        values = fields.get(name.lower())
        if values is not None:
            values.append(value)
    return fields


def _framing(status: int, fields: dict[str, list[str]]) -> tuple[str, int, bool]:
    """(framing, length, reusable-as-far-as-framing-goes) by RFC 9112 section 6.3."""
    if status < 200 or status in (204, 304):
        return NO_BODY, 0, True
    codings = fields["transfer-encoding"]
    if codings:
        last = ",".join(codings).rsplit(",", 1)[-1].strip().lower()
        # with Content-Length too, the message is suspect: read it, then close
        if last == "chunked":
            return CHUNKED, 0, not fields["content-length"]
        return UNTIL_CLOSE, 0, False
    lengths = {v.strip() for value in fields["content-length"] for v in value.split(",")}
    if not lengths:
        return UNTIL_CLOSE, 0, False
    if len(lengths) > 1 or not all(v.isdigit() and v.isascii() and len(v) <= MAX_LENGTH_DIGITS for v in lengths):
        raise ProtocolViolation(f"bad Content-Length: {_clip(', '.join(sorted(lengths)))}")
    length = int(lengths.pop())
    return (LENGTH, length, True) if length else (NO_BODY, 0, True)


def _persistent(minor: int, fields: dict[str, list[str]]) -> bool:
    tokens = {t.strip().lower() for value in fields["connection"] for t in value.split(",")}
    if "close" in tokens:
        return False
    return minor >= 1 or "keep-alive" in tokens


class Chunked:
    """Incremental decoder of a chunked body: ``feed`` returns payload pieces.

    ``done`` once the last chunk and the trailer section are read; ``rest``
    is then what followed them. Broken framing raises :class:`TruncatedBody`.
    """

    __slots__ = ("_buffer", "_left", "_state", "done", "rest")

    def __init__(self) -> None:
        self._buffer = b""
        self._left = 0
        self._state = "size"  # size -> data -> crlf -> size ... -> trailer
        self.done = False
        self.rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        pieces: list[bytes] = []
        buffer = self._buffer + data if self._buffer else data
        self._buffer = b""
        at = 0
        while at < len(buffer) and not self.done:
            if self._state == "data":
                take = min(self._left, len(buffer) - at)
                pieces.append(buffer[at : at + take])
                at += take
                self._left -= take
                if not self._left:
                    self._state = "crlf"
                continue
            line_end = buffer.find(b"\n", at)
            if line_end < 0:
                if len(buffer) - at > MAX_LINE_BYTES:
                    raise TruncatedBody("broken chunk framing: a line over 8190 bytes")
                self._buffer = buffer[at:]
                break
            line = buffer[at:line_end]
            self._line(line[:-1] if line.endswith(b"\r") else line)  # one CR: "\r\r\n" is no line end
            at = line_end + 1
        if self.done:
            self.rest = buffer[at:]
        return pieces

    def _line(self, line: bytes) -> None:
        if self._state == "crlf":
            if line:
                raise TruncatedBody(f"broken chunk framing: {_show(line)} after a chunk")
            self._state = "size"
        elif self._state == "size":
            match = _CHUNK_SIZE.match(line) if b"\r" not in line else None  # a bare CR: no line end
            if match is None:
                raise TruncatedBody(f"broken chunk framing: bad chunk size {_show(line)}")
            self._left = int(match[1], 16)
            self._state = "data" if self._left else "trailer"
        elif not line:  # the blank line that ends the trailer section
            self.done = True


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _show(raw: bytes) -> str:
    return repr(_clip(_text(raw[:80])))


def _clip(text: str) -> str:
    return text if len(text) <= 60 else text[:60] + "..."
