"""Gzip members that say how long they are, so a crash-damaged tail is found in O(members).

Every member we write is an ordinary RFC 1952 gzip member (any gzip reader,
warcio and pywb included, reads it) whose header carries one FEXTRA subfield,
``WG`` with 8 bytes: the member's own compressed length and the length of the
*write unit* it starts (the bytes written by one ``write`` call: for a WARC a
response member and its request member). BGZF does the same for BAM files.

Recovery hops from unit to unit reading 24-byte headers; the first unit that
runs past the end of the file is the partial one a kill -9 left behind. Pure
functions here; :func:`scan_units` takes an open binary file.

Deflate comes from ISA-L (``isal``) when installed: at its level 1 it is about
5x faster than zlib's level 6 for the same size on HTML (bench/store_speed.py),
and it releases the GIL like zlib. Without it, stdlib zlib at level 6.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from webgather.errors import CorruptState, StoreError

try:
    from isal import __version__ as _isal_version
    from isal import isal_zlib as _deflater

    DEFLATE_BACKEND = f"isal {_isal_version}"
    DEFAULT_LEVEL = 1
except ImportError:  # pragma: no cover - isal is a dependency; stdlib zlib is the fallback
    _deflater = zlib  # type: ignore[misc]
    DEFLATE_BACKEND = f"zlib {zlib.ZLIB_RUNTIME_VERSION}"
    DEFAULT_LEVEL = 6

__all__ = ["DEFAULT_LEVEL", "DEFLATE_BACKEND", "HEADER_BYTES", "gzip_unit", "iter_members", "scan_units"]

_MAGIC = b"\x1f\x8b\x08\x04"  # gzip id, deflate, FLG.FEXTRA
_PREFIX = _MAGIC + b"\x00\x00\x00\x00\x00\xff"  # MTIME 0, XFL 0, OS unknown
_EXTRA = struct.Struct("<H2sHII")  # XLEN, subfield id, subfield len, member_len, unit_len
HEADER_BYTES = len(_PREFIX) + _EXTRA.size
_TRAILER = struct.Struct("<II")
_MAX_MEMBER_BYTES = 0xFFFFFFFF
_READ_CHUNK_BYTES = 1 << 18


def gzip_unit(blocks: Sequence[bytes], level: int | None = None) -> tuple[bytes, list[int]]:
    """Compress each block into its own member; return the unit bytes and member lengths.

    ``level`` is the backend's (:data:`DEFAULT_LEVEL` if None).
    """
    level = DEFAULT_LEVEL if level is None else level
    bodies = []
    for block in blocks:
        deflated = _deflate(block, level)
        trailer = _TRAILER.pack(_deflater.crc32(block), len(block) & 0xFFFFFFFF)
        bodies.append((deflated, trailer))
    lengths = [HEADER_BYTES + len(d) + len(t) for d, t in bodies]
    total = sum(lengths)
    if total > _MAX_MEMBER_BYTES:
        raise StoreError(f"one write of {total} compressed bytes exceeds the 4 GiB member limit")
    parts: list[bytes] = []
    rest = total
    for (deflated, trailer), length in zip(bodies, lengths):
        parts += (_PREFIX, _EXTRA.pack(12, b"WG", 8, length, rest), deflated, trailer)
        rest -= length
    return b"".join(parts), lengths


def _deflate(block: bytes, level: int) -> bytes:
    """Raw deflate of one block.

    With zlib the window is no larger than the block needs: zlib's fixed cost
    is setting up its state (~256 KiB at the default window), 40-80 us a
    call, more than compressing a 300-byte request record; a window covering
    the whole block loses nothing (gzip readers inflate with a 32 KiB window).
    ISA-L's setup is cheap (~6 us).
    """
    if _deflater is not zlib:
        return bytes(_deflater.compress(block, level, -15))
    wbits = max(9, min(15, (len(block) + 262).bit_length()))
    deflater = zlib.compressobj(level, zlib.DEFLATED, -wbits, max(1, min(8, wbits - 7)))
    return deflater.compress(block) + deflater.flush()


def _read_header(handle: BinaryIO, at: int) -> tuple[int, int] | None:
    """(member_len, unit_len) of the member at ``at``; None if the header is cut short."""
    handle.seek(at)
    head = handle.read(HEADER_BYTES)
    if len(head) < HEADER_BYTES:
        if _PREFIX.startswith(head[: len(_PREFIX)]):
            return None
        raise CorruptState(f"no gzip member at offset {at}")
    xlen, sub, sublen, member_len, unit_len = _EXTRA.unpack_from(head, len(_PREFIX))
    if head[:4] != _MAGIC or (xlen, sub, sublen) != (12, b"WG", 8) or member_len > unit_len:
        raise CorruptState(f"no webgather gzip member at offset {at}")
    return member_len, unit_len


def scan_units(handle: BinaryIO, size: int, start: int = 0) -> int:
    """Offset where the whole units starting at ``start`` end: the size to truncate to.

    The last whole unit is also decompressed and checked (CRC, length), so a
    tail of zeros or garbage the file system left is cut as well.
    Raises :class:`CorruptState` if a member header in the middle is not ours.
    """
    at, last = start, None
    while at < size:
        header = _read_header(handle, at)
        if header is None or at + header[1] > size:
            break
        last, at = at, at + header[1]
    if last is not None and not _unit_is_whole(handle, last, at):
        return last
    return at


def _unit_is_whole(handle: BinaryIO, start: int, end: int) -> bool:
    handle.seek(start)
    data = handle.read(end - start)
    try:
        return all(True for _ in iter_members(data, strict=True))
    except StoreError:
        return False


def iter_members(source: bytes | BinaryIO, *, strict: bool = False) -> Iterator[bytes]:
    """Decompressed content of each gzip member in ``source``, in order.

    Streams a file in 256 KiB reads. A truncated or damaged last member is
    skipped (``strict``: raises :class:`StoreError` instead). Works on any
    gzip stream, ours or not.
    """
    handle = io.BytesIO(source) if isinstance(source, bytes) else source
    inflater, out, pending = zlib.decompressobj(wbits=31), [], b""
    while True:
        if not pending:
            pending = handle.read(_READ_CHUNK_BYTES)
            if not pending:
                break
        try:
            out.append(inflater.decompress(pending))
        except zlib.error as exc:
            if strict:
                raise StoreError(f"damaged gzip member: {exc}") from None
            return
        pending = b""
        if inflater.eof:
            yield b"".join(out)
            pending, out = inflater.unused_data, []
            inflater = zlib.decompressobj(wbits=31)
    if strict and (out or inflater.unconsumed_tail):
        raise StoreError("truncated gzip member")
