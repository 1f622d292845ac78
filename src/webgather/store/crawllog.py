"""The crawl log: one compact JSON object per fetch attempt (docs/contracts.md).

Appends are buffered and written with one ``write`` per flush: on
:meth:`CrawlLog.flush`, :meth:`CrawlLog.close` and at least every
``flush_every_entries`` entries, so a kill -9 loses at most that many entries
and at worst leaves one partial line. Re-opening cuts such a partial line off
before appending; :func:`read_crawl_log` skips it too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

from webgather.appendio import append_bytes
from webgather.errors import CorruptState, StoreError

__all__ = ["CRAWL_LOG_NAME", "CrawlLog", "encode_entry", "load_crawl_log", "read_crawl_log"]

CRAWL_LOG_NAME = "crawl.log.jsonl"
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=True)
_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)
"""json's C encoder class (None without the C accelerator: then ``_ENCODER.encode``)."""
_TAIL_BYTES = 1 << 20


def encode_entry(entry: Mapping[str, object]) -> str:
    """The entry as one JSON line; :class:`StoreError` if it is not JSON data.

    A dict goes straight to json's C encoder, built as ``_ENCODER.encode``
    builds it (a fresh circular-reference memo included) but without its
    Python layers: the same text, 7 -> 5.5 us for a page's entry.
    """
    try:
        if _C_MAKE_ENCODER is not None and type(entry) is dict:
            encode = _C_MAKE_ENCODER({}, _ENCODER.default, encode_basestring_ascii, None, ":", ",", False, False, False)
            return "".join(encode(entry, 0)) + "\n"
        return _ENCODER.encode(entry) + "\n"
    except (TypeError, ValueError) as exc:
        url = entry.get("url") if isinstance(entry, Mapping) else None
        raise StoreError(f"crawl-log entry for {url!r} is not JSON data: {exc}") from None


class CrawlLog:
    """Append-only JSON-lines log. One owner; not thread-safe."""

    def __init__(self, path: Path, fd: int, flush_every_entries: int) -> None:
        self.path = path
        self._fd = fd
        self._flush_every = flush_every_entries
        self._pending: list[str] = []

    @classmethod
    def open(cls, path: Path, *, flush_every_entries: int = 256) -> CrawlLog:
        """Open ``path`` for appending, cutting a partial last line left by a crash."""
        if flush_every_entries < 1:
            raise StoreError("flush_every_entries must be >= 1")
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            _cut_partial_line(fd)
        except OSError as exc:
            raise StoreError(f"cannot open crawl log {path}: {exc.strerror}") from exc
        return cls(path, fd, flush_every_entries)

    def append(self, entry: Mapping[str, object]) -> None:
        """Queue one entry; written at the next flush (at the latest after N entries)."""
        self.append_line(encode_entry(entry))

    def append_line(self, line: str) -> None:
        """Queue an already encoded line (from :func:`encode_entry`)."""
        if self._fd < 0:
            raise StoreError(f"crawl log {self.path} is closed")
        self._pending.append(line)
        if len(self._pending) >= self._flush_every:
            self.flush()

    def flush(self) -> None:
        """Write every queued entry with one write call.

        A failed write (disk full) cuts the file back to its size before the
        write and keeps the entries queued: :class:`WriteFailed` is raised, and
        a later flush (once there is room) writes them all exactly once.
        """
        if not self._pending or self._fd < 0:
            return
        data = "".join(self._pending).encode("utf-8")
        append_bytes(self._fd, data, f"cannot write crawl log {self.path}")
        self._pending.clear()

    def close(self) -> None:
        """Flush and close; further appends raise :class:`StoreError`."""
        if self._fd < 0:
            return
        try:
            self.flush()
        finally:
            os.close(self._fd)
            self._fd = -1


def _cut_partial_line(fd: int) -> None:
    size = os.fstat(fd).st_size
    if size == 0:
        return
    start = max(0, size - _TAIL_BYTES)
    tail = os.pread(fd, size - start, start)
    if tail.endswith(b"\n"):
        return
    newline = tail.rfind(b"\n")
    if newline < 0 and start > 0:
        raise CorruptState(f"crawl log ends with a line over {_TAIL_BYTES} bytes")
    os.ftruncate(fd, start + newline + 1)


def read_crawl_log(path: Path) -> Iterator[dict[str, Any]]:
    """Entries of a crawl log in order. A partial last line (a crash) is skipped;
    a bad line anywhere else raises :class:`CorruptState`."""
    decode = json.JSONDecoder().decode
    try:
        with Path(path).open("r", encoding="utf-8", errors="surrogateescape", newline="\n") as handle:
            for number, line in enumerate(handle, 1):
                if not line.endswith("\n"):
                    return
                try:
                    entry = decode(line)
                except ValueError:
                    raise CorruptState(f"{path}:{number}: not a JSON line") from None
                if not isinstance(entry, dict):
                    raise CorruptState(f"{path}:{number}: not a JSON object")
                yield entry
    except OSError as exc:
        raise StoreError(f"cannot read crawl log {path}: {exc.strerror}") from exc


def load_crawl_log(path: Path) -> list[dict[str, Any]]:
    """All entries at once, like ``list(read_crawl_log(path))`` but parsed in one
    JSON call (several times faster on millions of lines)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise StoreError(f"cannot read crawl log {path}: {exc.strerror}") from exc
    end = data.rfind(b"\n") + 1
    if not end:
        return []
    try:
        entries = json.loads(b"[" + data[: end - 1].replace(b"\n", b",") + b"]")
    except ValueError:
        return list(read_crawl_log(path))  # slow path: names the bad line
    if not all(isinstance(e, dict) for e in entries):
        return list(read_crawl_log(path))
    return list(entries)
