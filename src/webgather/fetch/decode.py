"""Content-Encoding removal within one decoded-bytes budget and the fetch's deadline. Pure.

``decode_body(raw, content_encoding, max_decoded_bytes, deadline)`` undoes
each listed coding, last applied first. At most :data:`MAX_CODINGS` codings
(``identity`` aside) are accepted: more is a :class:`ProtocolViolation`
(nobody compresses a page four times; twenty nested gzip layers were an
attack costing minutes of CPU). Every byte any coding produces counts against
one budget, ``max_decoded_bytes``: past it decoding stops with
:class:`DecompressionBomb`, however the bomb is split across codings.
Decompressors are fed at most :data:`_STEP_BYTES` of input and asked for at
most as much output per call, so the work is linear in the bytes handled
(feeding a whole layer and re-feeding ``unconsumed_tail`` copied the tail on
every call: quadratic). Between calls the optional :class:`Deadline` is
checked: a decode still running at the fetch's ``total_timeout_s`` ends as
:class:`FetchTimeout`.

* ``gzip``/``x-gzip``: zlib with a gzip header, several members allowed.
* ``deflate``: zlib-wrapped as RFC 9110 says, or raw deflate as many servers send.
* ``br``: only if the ``brotli`` package (>= 1.2, whose decoder can bound its
  output) is importable; then, and only then, :data:`ACCEPT_ENCODING` offers it.
* ``identity`` (or no header): the bytes as they are.

Anything else is a :class:`ProtocolViolation` (we never offered it), corrupt
data too; a compressed stream that stops before its end is a
:class:`TruncatedBody`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from webgather.errors import DecompressionBomb, FetchTimeout, ProtocolViolation, TruncatedBody
from webgather.fetch.model import Headers

__all__ = [
    "ACCEPT_ENCODING", "BROTLI_AVAILABLE", "MAX_CODINGS", "Deadline", "content_encoding", "decode_body", "needs_decoding",
]  # fmt: skip

_brotli: Any = None
try:  # optional: brotli is not a dependency
    import brotli

    _brotli = brotli
except ImportError:  # pragma: no cover - depends on the environment
    pass
if _brotli is not None and not hasattr(_brotli.Decompressor(), "can_accept_more_data"):
    _brotli = None  # pragma: no cover - brotli < 1.2 cannot bound its output: do not offer br

BROTLI_AVAILABLE = _brotli is not None
ACCEPT_ENCODING = "gzip, deflate, br" if BROTLI_AVAILABLE else "gzip, deflate"
"""The Accept-Encoding header the fetcher sends: exactly what :func:`decode_body` can undo."""

MAX_CODINGS = 3
"""Content codings (``identity`` aside) one response may stack; more is a protocol error."""

_STEP_BYTES = 64 * 1024
"""Input fed and output asked for per decompressor call."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """When the fetch's time is up: ``now()`` (a monotonic clock, injected) past ``at``."""

    now: Callable[[], float]
    at: float
    limit_s: float
    """The limit ``at`` stands for, for the message."""


class _Budget:
    """The decoded bytes left for every coding together, and the deadline."""

    def __init__(self, max_bytes: int, deadline: Deadline | None) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self.deadline = deadline

    def took(self, data: bytes) -> bytes:
        """Count ``data`` (one decompressor call's output) and check the deadline."""
        self.used += len(data)
        if self.used > self.max_bytes:
            raise DecompressionBomb(f"decoded body over {self.max_bytes} bytes")
        if self.deadline is not None and self.deadline.now() > self.deadline.at:
            raise FetchTimeout(f"decoding the body passed total_timeout_s={self.deadline.limit_s:g}")
        return data

    def room(self) -> int:
        """How much more output to ask for: one byte past the budget trips it."""
        return max(1, min(_STEP_BYTES, self.max_bytes - self.used + 1))


def content_encoding(headers: Headers) -> str | None:
    """Every Content-Encoding field of ``headers`` as one list (RFC 9110 5.3), or None."""
    values = [value for name, value in headers if name.lower() == "content-encoding"]
    return ", ".join(values) if values else None


def needs_decoding(raw: bytes, content_encoding: str | None) -> bool:
    """``raw`` has content codings to undo (not none, not only ``identity``, not empty)."""
    return bool(raw) and any(c.strip() and c.strip().lower() != "identity" for c in (content_encoding or "").split(","))


def decode_body(
    raw: bytes, content_encoding: str | None, max_decoded_bytes: int, deadline: Deadline | None = None
) -> bytes:
    """``raw`` with every Content-Encoding in ``content_encoding`` undone; see the module docstring."""
    tokens = [c.strip().lower() for c in content_encoding.split(",")] if content_encoding else []
    codings = [c for c in tokens if c and c != "identity"]
    if not codings:  # the common case: the bytes as they came
        if len(raw) > max_decoded_bytes:
            raise DecompressionBomb(f"decoded body over {max_decoded_bytes} bytes")
        return raw
    if not raw:  # an empty body (a HEAD-like 200, a 204 with the header) decodes to nothing, whatever its coding
        return raw
    if len(codings) > MAX_CODINGS:
        raise ProtocolViolation(f"{len(codings)} content codings stacked (at most {MAX_CODINGS} accepted)")
    decoders = [_DECODERS.get(coding) for coding in codings]
    unknown = [coding for coding, decoder in zip(codings, decoders, strict=True) if decoder is None]
    if unknown:
        raise ProtocolViolation(f"unsupported content-encoding {unknown[-1]!r}")
    budget = _Budget(max_decoded_bytes, deadline)
    data = raw
    for decoder in reversed(decoders):
        assert decoder is not None
        data = decoder(data, budget)  # within the budget: the last output was counted too
    return data


class _ZlibStream(Protocol):
    @property
    def eof(self) -> bool: ...
    @property
    def unused_data(self) -> bytes: ...
    @property
    def unconsumed_tail(self) -> bytes: ...
    def decompress(self, data: bytes | memoryview, max_length: int = ...) -> bytes: ...


def _inflate(data: bytes, start: int, wbits: int, budget: _Budget, parts: list[bytes]) -> int:
    """Run one zlib stream over ``data[start:]`` into ``parts``; returns the index just past its end.

    At most ``_STEP_BYTES`` go in per call, so ``unconsumed_tail`` (copied by
    zlib on every call) stays small whatever the size of ``data``.
    """
    stream: _ZlibStream = zlib.decompressobj(wbits)
    view = memoryview(data)
    at = start
    pending: bytes | memoryview = b""
    while not stream.eof:
        if not pending and at < len(data):
            pending, at = view[at : at + _STEP_BYTES], min(len(data), at + _STEP_BYTES)
        out = stream.decompress(pending, budget.room())
        parts.append(budget.took(out))
        if not pending and not out:  # input used up and nothing left buffered
            break
        pending = stream.unconsumed_tail
    return at - len(stream.unused_data) if stream.eof else -1


def _zlib_errors(name: str, run: Callable[[], int]) -> int:
    """``run()``, with zlib's errors as ProtocolViolation and a stream without its end as TruncatedBody."""
    try:
        end = run()
    except zlib.error as exc:
        raise ProtocolViolation(f"corrupt {name} data: {exc}") from None
    if end < 0:
        raise TruncatedBody(f"{name} stream ends before its end marker")
    return end


def _gunzip(data: bytes, budget: _Budget) -> bytes:
    parts: list[bytes] = []
    end = 0
    while True:
        start = end
        end = _zlib_errors("gzip", lambda: _inflate(data, start, 16 + zlib.MAX_WBITS, budget, parts))
        if end >= len(data):
            break
        if data[end] == 0:  # trailing zero padding is common; zeros then more data is not
            if data.count(0, end) != len(data) - end:
                raise ProtocolViolation("corrupt gzip data: bytes after the zero padding")
            break
    return b"".join(parts)


def _zlib_header(data: bytes) -> bool:
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _inflate_deflate(data: bytes, budget: _Budget) -> bytes:
    parts: list[bytes] = []
    wbits = zlib.MAX_WBITS if _zlib_header(data) else -zlib.MAX_WBITS
    _zlib_errors("deflate", lambda: _inflate(data, 0, wbits, budget, parts))
    return b"".join(parts)


def _unbrotli(data: bytes, budget: _Budget) -> bytes:
    """brotli >= 1.2: ``process(data, output_buffer_limit)`` keeps undelivered output inside."""
    parts: list[bytes] = []
    stream = _brotli.Decompressor()
    try:
        for start in range(0, len(data), _STEP_BYTES):
            piece = data[start : start + _STEP_BYTES]
            parts.append(budget.took(stream.process(piece, output_buffer_limit=budget.room())))
            while not stream.is_finished() and not stream.can_accept_more_data():
                parts.append(budget.took(stream.process(b"", output_buffer_limit=budget.room())))
        finished = bool(stream.is_finished())
    except _brotli.error as exc:
        raise ProtocolViolation(f"corrupt br data: {exc}") from None
    if not finished:
        raise TruncatedBody("br stream ends before its end marker")
    return b"".join(parts)


_DECODERS: dict[str, Callable[[bytes, _Budget], bytes]] = {
    "gzip": _gunzip,
    "x-gzip": _gunzip,
    "deflate": _inflate_deflate,
}
if BROTLI_AVAILABLE:
    _DECODERS["br"] = _unbrotli
