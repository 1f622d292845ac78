"""Content-Encoding removal with a hard cap on decoded bytes. Pure.

``decode_body(raw, content_encoding, max_decoded_bytes)`` undoes each listed
coding, last applied first. Every decompressor is driven in bounded steps
(``max_length`` / ``output_buffer_limit``), so a 10 KB bomb never becomes
10 GB in memory: past ``max_decoded_bytes`` decoding stops with
:class:`DecompressionBomb`.

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
from typing import Any, Protocol

from webgather.errors import DecompressionBomb, ProtocolViolation, TruncatedBody

__all__ = ["ACCEPT_ENCODING", "BROTLI_AVAILABLE", "decode_body"]

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

_STEP_BYTES = 64 * 1024
"""Output produced per decompressor call, and input fed to brotli per call."""


class _Sink:
    """Collects decoded output and enforces the cap."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.max_bytes:
            raise DecompressionBomb(f"decoded body over {self.max_bytes} bytes")
        self.parts.append(data)

    def room(self) -> int:
        """How much more output to ask for: one byte past the cap trips it."""
        return max(1, min(_STEP_BYTES, self.max_bytes - self.size + 1))


def decode_body(raw: bytes, content_encoding: str | None, max_decoded_bytes: int) -> bytes:
    """``raw`` with every Content-Encoding in ``content_encoding`` undone."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    data = raw
    for coding in reversed([c for c in codings if c and c != "identity"]):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            raise ProtocolViolation(f"unsupported content-encoding {coding!r}")
        data = decoder(data, max_decoded_bytes)
    if len(data) > max_decoded_bytes:
        raise DecompressionBomb(f"decoded body over {max_decoded_bytes} bytes")
    return data


class _ZlibStream(Protocol):
    @property
    def eof(self) -> bool: ...
    @property
    def unused_data(self) -> bytes: ...
    @property
    def unconsumed_tail(self) -> bytes: ...
    def decompress(self, data: bytes, max_length: int = ...) -> bytes: ...


def _inflate(data: bytes, wbits: int, sink: _Sink, name: str) -> bytes:
    """Run one zlib stream over ``data`` into ``sink``; returns bytes after its end."""
    stream: _ZlibStream = zlib.decompressobj(wbits)
    pending = data
    try:
        while pending and not stream.eof:
            sink.add(stream.decompress(pending, sink.room()))
            pending = stream.unconsumed_tail
        while not stream.eof:  # input used up, output may still be buffered
            out = stream.decompress(b"", sink.room())
            if not out:
                break
            sink.add(out)
    except zlib.error as exc:
        raise ProtocolViolation(f"corrupt {name} data: {exc}") from None
    if not stream.eof:
        raise TruncatedBody(f"{name} stream ends before its end marker")
    return stream.unused_data


def _gunzip(data: bytes, max_bytes: int) -> bytes:
    sink = _Sink(max_bytes)
    rest = _inflate(data, 16 + zlib.MAX_WBITS, sink, "gzip")
    while rest.strip(b"\0"):  # another member follows (trailing zero padding is common)
        rest = _inflate(rest, 16 + zlib.MAX_WBITS, sink, "gzip")
    return b"".join(sink.parts)


def _zlib_header(data: bytes) -> bool:
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def _inflate_deflate(data: bytes, max_bytes: int) -> bytes:
    sink = _Sink(max_bytes)
    wbits = zlib.MAX_WBITS if _zlib_header(data) else -zlib.MAX_WBITS
    _inflate(data, wbits, sink, "deflate")
    return b"".join(sink.parts)


def _unbrotli(data: bytes, max_bytes: int) -> bytes:
    """brotli >= 1.2: ``process(data, output_buffer_limit)`` keeps undelivered output inside."""
    sink = _Sink(max_bytes)
    stream = _brotli.Decompressor()
    try:
        for start in range(0, len(data), _STEP_BYTES):
            sink.add(stream.process(data[start : start + _STEP_BYTES], output_buffer_limit=sink.room()))
            while not stream.is_finished() and not stream.can_accept_more_data():
                sink.add(stream.process(b"", output_buffer_limit=sink.room()))
        finished = bool(stream.is_finished())
    except _brotli.error as exc:
        raise ProtocolViolation(f"corrupt br data: {exc}") from None
    if not finished:
        raise TruncatedBody("br stream ends before its end marker")
    return b"".join(sink.parts)


_DECODERS: dict[str, Callable[[bytes, int], bytes]] = {
    "gzip": _gunzip,
    "x-gzip": _gunzip,
    "deflate": _inflate_deflate,
}
if BROTLI_AVAILABLE:
    _DECODERS["br"] = _unbrotli
