"""Repair after a kill -9: cut a partial write off the newest WARC and the index.

Only tails are touched, never earlier bytes: a WARC is cut at the start of
the first write unit that runs past the end of the file (or whose last
member does not decompress whole); the index loses a partial last line and
the trailing lines that point past the end of the repaired WARC. Called by
:meth:`webgather.store.warc.Archive.open`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from webgather.errors import CorruptState, StoreError
from webgather.store.cdxj import parse_line
from webgather.store.gzmember import scan_units

__all__ = ["repair_index", "repair_warc"]

_MAX_HEADER_BYTES = 1 << 20
_CHUNK_BYTES = 1 << 16


def repair_warc(path: Path, gzipped: bool) -> int:
    """Truncate ``path`` to its whole write units; return the new size."""
    try:
        with path.open("r+b") as handle:
            size = os.fstat(handle.fileno()).st_size
            end = scan_units(handle, size) if gzipped else _scan_plain(handle, size)
            if end < size:
                handle.truncate(end)
                os.fsync(handle.fileno())
            return end
    except CorruptState as exc:
        raise CorruptState(f"{path}: {exc}") from None
    except OSError as exc:
        raise StoreError(f"cannot repair {path}: {exc.strerror}") from exc


def _plain_record(handle: BinaryIO, at: int) -> tuple[int, bytes] | None:
    """(record length, WARC-Type) of the uncompressed record at ``at``; None if cut short."""
    handle.seek(at)
    head = handle.read(_CHUNK_BYTES)
    end = head.find(b"\r\n\r\n")
    while end < 0 and len(head) < _MAX_HEADER_BYTES:
        more = handle.read(_CHUNK_BYTES)
        if not more:
            break
        head += more
        end = head.find(b"\r\n\r\n")
    if end < 0:
        if b"WARC/1.1\r\n".startswith(head[:10]) and len(head) < _MAX_HEADER_BYTES:
            return None
        raise CorruptState(f"no WARC record at offset {at}")
    if not head.startswith(b"WARC/"):
        raise CorruptState(f"no WARC record at offset {at}")
    length, kind = -1, b""
    for line in head[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip()) if value.strip().isdigit() else -1
        elif name.strip().lower() == b"warc-type":
            kind = value.strip()
    if length < 0:
        raise CorruptState(f"WARC record at offset {at} has no Content-Length")
    return end + 4 + length + 4, kind


def _scan_plain(handle: BinaryIO, size: int) -> int:
    """Like :func:`scan_units` for an uncompressed WARC: a unit is a warcinfo record,
    or a response/revisit record and the request record after it."""
    at, unit_start, closed = 0, 0, True
    while at < size:
        record = _plain_record(handle, at)
        if record is None or at + record[0] > size:
            return at if closed else unit_start
        length, kind = record
        if kind != b"request":
            unit_start = at
        closed = kind in (b"request", b"warcinfo")
        at += length
    if not closed:
        return unit_start
    if size == 0:
        return 0
    handle.seek(size - 4)
    return at if handle.read(4) == b"\r\n\r\n" else unit_start


def _lines_backward(handle: BinaryIO, end: int) -> Iterator[tuple[int, bytes]]:
    """(start offset, line) of the complete lines ending before ``end``, last first."""
    pending = b""
    pos = end
    while pos > 0:
        step = min(_CHUNK_BYTES, pos)
        pos -= step
        handle.seek(pos)
        pending = handle.read(step) + pending
        cut = pending.rfind(b"\n", 0, len(pending) - 1)
        while cut >= 0:
            yield pos + cut + 1, pending[cut + 1 :]
            pending = pending[: cut + 1]
            cut = pending.rfind(b"\n", 0, len(pending) - 1)
    if pending:
        yield 0, pending


def repair_index(path: Path, sizes: dict[str, int]) -> None:
    """Cut a partial last line and trailing lines pointing past ``sizes[filename]``."""
    if not path.exists():
        return
    try:
        with path.open("r+b") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _MAX_HEADER_BYTES))
            tail = handle.read()
            cut = size if tail.endswith(b"\n") or not tail else size - len(tail) + tail.rfind(b"\n") + 1
            cut = max(cut, 0)
            for start, line in _lines_backward(handle, cut):
                entry = parse_line(line.decode("utf-8", "replace"))
                limit = sizes.get(entry.filename)
                if limit is None or entry.offset + entry.length <= limit:
                    break
                cut = start
            if cut < size:
                handle.truncate(cut)
                os.fsync(handle.fileno())
    except OSError as exc:
        raise StoreError(f"cannot repair index {path}: {exc.strerror}") from exc
