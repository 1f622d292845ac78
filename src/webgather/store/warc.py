"""The WARC writer of one node: rotation, gzip per record, index lines, crash repair.

Files are ``<out_dir>/warc/webgather-<node>-<seq:05d>.warc.gz`` (``.warc``
when ``StoreConfig.warc_gzip`` is off), each starting with a ``warcinfo``
record. A fetch is one *write unit*: its response (or revisit) record and its
request record, each its own gzip member (:mod:`.gzmember`), built in memory
and written with one ``write`` call. The index line is written just before
its unit, so after a kill -9 the repair on :meth:`Archive.open` only cuts
tails: the partial unit from the WARC, then the lines that point past the
end. A re-opened archive continues in a new file (``seq + 1``): files that
were written before are never appended to or rewritten.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from webgather import __version__
from webgather.appendio import append_bytes
from webgather.config import StoreConfig
from webgather.errors import StoreError, WriteFailed
from webgather.fetch.model import FetchResult
from webgather.store.cdxj import INDEX_NAME, cdxj_line
from webgather.store.gzmember import gzip_unit
from webgather.store.pagerecords import fetch_records
from webgather.store.records import (
    REVISIT_PROFILES, RevisitProfile, WarcRecord, conversion_record, iso_date, request_record, revisit_record, sha1_digest,
    warcinfo_record,
)
from webgather.store.recovery import repair_index, repair_warc

__all__ = ["GZIP_LEVEL", "PREFIX", "Archive", "ArchiveRef", "check_fetch", "check_revisit", "closed_files",
           "RandomRecordIds", "random_record_id"]

PREFIX = "webgather"
GZIP_LEVEL: int | None = None
"""Deflate level of each member; None: the backend's default (:mod:`.gzmember`)."""
_YEAR_10000_S = 253_402_300_800.0
_NODE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ArchiveRef:
    """Where a response (or revisit) record is: what a re-crawl needs to refer to it."""

    filename: str
    offset: int
    length: int
    record_id: str
    payload_digest: str
    """``sha1:<BASE32>`` of the payload (a revisit: the original's)."""
    date: str
    """The record's WARC-Date."""
    url: str = ""
    """WARC-Target-URI of the record."""


def random_record_id() -> str:
    """``<urn:uuid:...>`` from a random (version 4) UUID: the default record id.

    Formats the 16 random bytes as ``str(uuid.UUID(bytes=..., version=4))``
    would, without building the object (1.2 instead of 2.7 us; 2 ids a page).
    """
    return _uuid4_urn(os.urandom(16))


class RandomRecordIds:
    """:func:`random_record_id` with the random bytes drawn 4 KiB at a time: one ``getrandom``
    call (a syscall that hands the GIL to the crawl's thread and waits to get it back) per
    256 ids, not one per id. One owner (an archive); a forked child draws its own bytes."""

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0
        self._pid = -1

    def __call__(self) -> str:
        if self._at >= len(self._pool) or self._pid != os.getpid():
            self._pool, self._at, self._pid = os.urandom(16 * 256), 0, os.getpid()
        at = self._at
        self._at = at + 16
        return _uuid4_urn(self._pool[at : at + 16])


def _uuid4_urn(random16: bytes) -> str:
    raw = bytearray(random16)
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


class Archive:
    """Appends WARC records for one node. Not thread-safe: one owner (the writer thread)."""

    def __init__(
        self,
        warc_dir: Path,
        node: str,
        config: StoreConfig,
        next_seq: int,
        ids: Callable[[], str],
        now_iso: Callable[[], str] | None,
    ) -> None:
        self.warc_dir = warc_dir
        self.node = node
        self.config = config
        self._seq = next_seq
        self._ids = ids
        self._now_iso = now_iso
        self._suffix = ".warc.gz" if config.warc_gzip else ".warc"
        self._fd: int | None = None
        self._size = 0
        self._name = ""
        self._path = warc_dir  # the open file's path (for error messages; built once a file, not once a write)
        self._has_records = False
        self._warcinfo_id: str | None = None
        self._index_path = warc_dir / INDEX_NAME
        self._index_fd = _open_append(self._index_path)
        # kept here, not asked of the OS per record: this archive is the index's one writer
        self._index_size = _size_of(self._index_fd, self._index_path)
        self._index_what = f"cannot write {self._index_path}"
        self._what = ""
        self._lines: list[bytes] = []  # deferred index lines and units (:meth:`commit`)
        self._units: list[bytes] = []
        self._committed = (0, self._index_size, False)

    @classmethod
    def open(
        cls,
        out_dir: Path,
        node: str,
        config: StoreConfig,
        *,
        ids: Callable[[], str] | None = None,
        now_iso: Callable[[], str] | None = None,
    ) -> Archive:
        """Open (or re-open and repair) the archive under ``out_dir/warc``."""
        if not _NODE_NAME.match(node):
            raise StoreError(f"node name {node!r} is not usable in a file name")
        if config.warc_max_bytes <= 0:
            raise StoreError("store.warc_max_bytes must be > 0")
        warc_dir = Path(out_dir) / "warc"
        try:
            warc_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {warc_dir}: {exc.strerror}") from exc
        next_seq = _repair_newest(warc_dir, node)
        return cls(warc_dir, node, config, next_seq, ids or RandomRecordIds(), now_iso)

    @property
    def current_file(self) -> str:
        """Name of the file being written ("" before the first record)."""
        return self._name

    def write_fetch(self, result: FetchResult, rendered: bytes | None = None, *, defer: bool = False) -> ArchiveRef | None:
        """Write response + request records; None (nothing written) if there was no response.
        ``rendered``: the page's DOM rendered in a browser, written in the same unit as a
        ``conversion`` record referring to the response. ``defer``: queue the unit and its
        index line for the next :meth:`commit` (the ref is where it will be)."""
        if result.status is None:
            return None
        date = self._date(result)
        self._ensure_file(date)
        response_id, request_id = self._ids(), self._ids()
        response, request = fetch_records(result, response_id, request_id, date, self._warcinfo_id)
        extra = None
        if rendered is not None:
            extra = conversion_record(result.url, self._ids(), date, response_id, rendered, self._warcinfo_id)
        return self._write_unit(result, response, request, result.content_type, extra, defer)

    def write_revisit(
        self, result: FetchResult, original: ArchiveRef, profile: RevisitProfile
    ) -> ArchiveRef:
        """Write a revisit record pointing at ``original`` (and its request if configured)."""
        check_revisit(result, original, profile)
        date = self._date(result)
        self._ensure_file(date)
        revisit_id, request_id = self._ids(), self._ids()
        refers = (original.record_id, original.url or result.url, original.date, original.payload_digest)
        revisit = revisit_record(result, revisit_id, date, profile, refers, self._warcinfo_id)
        request = None
        if self.config.revisit_request_records:
            request = request_record(result, request_id, date, revisit_id, self._warcinfo_id)
        return self._write_unit(result, revisit, request, "warc/revisit")

    def commit(self) -> None:
        """Write the deferred units: their index lines (one write), then the units (one write).

        A page's two writes cost the writer thread two syscalls, each of which hands the GIL
        to the crawl's thread and waits to get it back; a batch pays two in all. The crash
        order is the per-unit one (lines first: a kill -9 between leaves lines past the
        WARC's end, which reopening cuts). A failed write leaves both files as they were
        before the batch and raises :class:`WriteFailed`."""
        if not self._units:
            return
        size, index_size, had_records = self._committed
        lines, units = b"".join(self._lines), b"".join(self._units)
        self._lines, self._units = [], []
        assert self._fd is not None
        try:
            append_bytes(self._index_fd, lines, self._index_what, index_size)
            try:
                append_bytes(self._fd, units, self._what, size)
            except WriteFailed:
                with contextlib.suppress(OSError):  # the record's error is the one to report
                    os.ftruncate(self._index_fd, index_size)
                raise
        except WriteFailed:
            self._size, self._index_size, self._has_records = size, index_size, had_records
            raise

    def rotate(self) -> tuple[list[str], int]:
        """Close the file being written (the next record opens a new one); returns the names of
        this node's files (all closed now) and the index's length, every line of which is theirs."""
        self._close_file()
        return closed_files(self.warc_dir, self.node), self._index_size

    def close(self) -> None:
        """Close the files; the archive cannot be written afterwards."""
        self._close_file()
        if self._index_fd >= 0:
            os.close(self._index_fd)
            self._index_fd = -1

    def _date(self, result: FetchResult) -> str:
        if self._now_iso is not None:
            return self._now_iso()
        return iso_date(check_fetch(result).started_at)

    def _write_unit(
        self, result: FetchResult, first: WarcRecord, request: WarcRecord | None, mime: str,
        extra: WarcRecord | None = None, defer: bool = False,
    ) -> ArchiveRef:
        blocks = (first.data,) if request is None else (first.data, request.data)
        unit, length = self._encode(blocks if extra is None else (*blocks, extra.data))
        digest = first.payload_digest or ""
        line = cdxj_line(result.url, first.date, mime, result.status, digest, length, self._size, self._name)
        encoded = line.encode("utf-8", "surrogateescape")
        ref = ArchiveRef(self._name, self._size, length, first.record_id, digest, first.date, result.url)
        if not self._units:  # what a failed commit goes back to
            self._committed = (self._size, self._index_size, self._has_records)
        self._lines.append(encoded)
        self._units.append(unit)
        self._size += len(unit)
        self._index_size += len(encoded)
        self._has_records = True
        if not defer:
            self.commit()
        return ref

    def _encode(self, blocks: tuple[bytes, ...]) -> tuple[bytes, int]:
        """The unit's bytes and the length of its first record as stored."""
        if self.config.warc_gzip:
            unit, lengths = gzip_unit(blocks, GZIP_LEVEL)
            return unit, lengths[0]
        return b"".join(blocks), len(blocks[0])

    def _append(self, unit: bytes) -> None:
        assert self._fd is not None
        self._size = append_bytes(self._fd, unit, self._what, self._size) + len(unit)

    def _ensure_file(self, date: str) -> None:
        """Open the next file if none is open or the current one holds warc_max_bytes."""
        if self._fd is not None:
            if self._size < self.config.warc_max_bytes or not self._has_records:
                return
            self._close_file()
        if self._index_fd < 0:
            raise StoreError("the archive is closed")
        name = f"{PREFIX}-{self.node}-{self._seq:05d}{self._suffix}"
        path = self.warc_dir / name
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from exc
        self._seq += 1
        self._name, self._path, self._size, self._has_records = name, path, 0, False
        self._what = f"cannot write {path}"
        self._warcinfo_id = self._ids()
        info = warcinfo_record(self._warcinfo_id, date, name, _warcinfo_fields(self.node))
        self._append(self._encode((info.data,))[0])

    def _close_file(self) -> None:
        self.commit()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def closed_files(warc_dir: Path, node: str) -> list[str]:
    """Names of ``node``'s WARC files in ``warc_dir``, in order (closed if its archive is closed or rotated)."""
    return sorted(p.name for p in Path(warc_dir).glob(f"{PREFIX}-{node}-*.warc*") if p.name.endswith((".warc", ".gz")))


def check_fetch(result: FetchResult) -> FetchResult:
    """``result`` if the archive can write it, else :class:`StoreError` (nothing written)."""
    if not (isinstance(result.started_at, (int, float)) and 0 <= result.started_at < _YEAR_10000_S):
        raise StoreError(f"{result.url}: started_at {result.started_at!r} is not a time")
    return result


def check_revisit(result: FetchResult, original: ArchiveRef, profile: str) -> None:
    """:class:`StoreError` unless a revisit of ``original`` can be written for ``result``."""
    check_fetch(result)
    if result.status is None:
        raise StoreError(f"revisit of {result.url} without a response")
    if profile not in REVISIT_PROFILES:
        raise StoreError(f"unknown revisit profile {profile!r}")
    if profile == "identical-payload-digest":
        digest = sha1_digest(result.raw_body)
        if digest != original.payload_digest:
            raise StoreError(f"{result.url}: payload {digest} differs from the original's")


def _warcinfo_fields(node: str) -> list[tuple[str, str]]:
    return [
        ("software", f"webgather/{__version__}"),
        ("format", "WARC File Format 1.1"),
        ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"),
        ("isPartOf", f"webgather crawl, node {node}"),
    ]


def _open_append(path: Path) -> int:
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot open {path}: {exc.strerror}") from exc


def _size_of(fd: int, path: Path) -> int:
    try:
        return os.fstat(fd).st_size
    except OSError as exc:
        os.close(fd)
        raise StoreError(f"cannot open {path}: {exc.strerror}") from exc


def _repair_newest(warc_dir: Path, node: str) -> int:
    """Repair the node's newest WARC and the index; return the next sequence number."""
    pattern = re.compile(rf"^{re.escape(PREFIX)}-{re.escape(node)}-(\d{{5,}})\.warc(\.gz)?$")
    found = sorted(
        (int(m.group(1)), name, m.group(2) is not None)
        for name in os.listdir(warc_dir)
        if (m := pattern.match(name))
    )
    if not found:
        repair_index(warc_dir / INDEX_NAME, {})
        return 0
    seq, name, gzipped = found[-1]
    size = repair_warc(warc_dir / name, gzipped)
    repair_index(warc_dir / INDEX_NAME, {name: size})
    if size == 0:
        (warc_dir / name).unlink()
        return seq
    return seq + 1
