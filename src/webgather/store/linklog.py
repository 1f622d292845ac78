"""The link log (docs/contracts.md): ``links.bin`` edges and ``anchors.jsonl.gz`` anchors.

``links.bin`` holds one 32-byte little-endian record ``(src_fp, dst_fp,
src_host_fp, dst_host_fp)`` per followable out-link occurrence, written from
a numpy array with one write per flush. ``anchors.jsonl.gz`` holds one JSON
line per parsed page, ``{"url": src, "links": [[dst_url, anchor, nofollow],
...]}``, each flush one independent gzip member (:mod:`.gzmember`), so a
crash loses only the unflushed tail. Re-opening cuts a partial record or
member off the tail; the readers skip one as well.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

import numpy as np

from webgather.appendio import append_bytes
from webgather.errors import CorruptState, StoreError
from webgather.store.gzmember import gzip_unit, iter_members, scan_units

__all__ = ["ANCHORS_NAME", "EDGE_DTYPE", "LINKS_NAME", "Link", "LinkLog", "anchor_line", "read_anchors", "read_edges"]

LINKS_NAME = "links.bin"
ANCHORS_NAME = "anchors.jsonl.gz"
EDGE_DTYPE = np.dtype([("src", "<u8"), ("dst", "<u8"), ("src_host", "<u8"), ("dst_host", "<u8")])
_json_str = encode_basestring_ascii
"""A str as a JSON string literal, as json.dumps writes it (ensure_ascii)."""
Link = tuple[str, int, int, str, bool]
"""(dst_url, dst_fp, dst_host_fp, anchor_text, nofollow)."""


class LinkLog:
    """Appends pages' out-links. One owner; not thread-safe."""

    def __init__(self, directory: Path, edges_fd: int, anchors_fd: int, flush_every_pages: int) -> None:
        self.directory = directory
        self._edges_fd = edges_fd
        self._anchors_fd = anchors_fd
        self._flush_every = flush_every_pages
        self._edge_rows: list[tuple[int, int, int, int]] = []
        self._anchor_lines: list[str] = []

    @classmethod
    def open(cls, directory: Path, *, flush_every_pages: int = 256) -> LinkLog:
        """Open (and repair the tails of) ``directory/links.bin`` and ``anchors.jsonl.gz``."""
        if flush_every_pages < 1:
            raise StoreError("flush_every_pages must be >= 1")
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            edges_fd = os.open(directory / LINKS_NAME, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            size = os.fstat(edges_fd).st_size
            os.ftruncate(edges_fd, size - size % EDGE_DTYPE.itemsize)
            anchors_path = directory / ANCHORS_NAME
            anchors_fd = os.open(anchors_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            with open(anchors_fd, "r+b", closefd=False) as handle:
                size = os.fstat(anchors_fd).st_size
                os.ftruncate(anchors_fd, scan_units(handle, size))
        except CorruptState as exc:
            raise CorruptState(f"{directory / ANCHORS_NAME}: {exc}") from None
        except OSError as exc:
            raise StoreError(f"cannot open link log in {directory}: {exc.strerror}") from exc
        return cls(directory, edges_fd, anchors_fd, flush_every_pages)

    def append_page(self, src_url: str, src_fp: int, src_host_fp: int, links: Sequence[Link]) -> None:
        """Record a parsed page's links: followable ones as edges, all of them as anchors."""
        if self._edges_fd < 0:
            raise StoreError("the link log is closed")
        rows = [(src_fp, dst_fp, src_host_fp, host_fp) for _, dst_fp, host_fp, _, nofollow in links if not nofollow]
        self._edge_rows += rows
        try:
            self._anchor_lines.append(anchor_line(src_url, links))
        except (TypeError, ValueError) as exc:
            del self._edge_rows[len(self._edge_rows) - len(rows) :]
            raise StoreError(f"links of {src_url!r} are not JSON data: {exc}") from None
        if len(self._anchor_lines) >= self._flush_every:
            self.flush()

    def flush(self) -> None:
        """Write the queued edges (one write) and anchors (one gzip member).

        Each part leaves the queue only once written: after a failed write
        (disk full, :class:`WriteFailed`) a later flush writes it exactly once."""
        if self._edges_fd < 0:
            return
        if self._edge_rows:
            try:
                edges = np.array(self._edge_rows, dtype=EDGE_DTYPE)
            except (OverflowError, ValueError, TypeError) as exc:
                self._edge_rows = []
                raise StoreError(f"link fingerprints must be unsigned 64-bit integers: {exc}") from None
            append_bytes(self._edges_fd, edges.tobytes(), f"cannot write {self.directory / LINKS_NAME}")
            self._edge_rows = []
        if self._anchor_lines:
            member, _ = gzip_unit(["".join(self._anchor_lines).encode("utf-8", "surrogatepass")])
            append_bytes(self._anchors_fd, member, f"cannot write {self.directory / ANCHORS_NAME}")
            self._anchor_lines = []

    def close(self) -> None:
        """Flush and close both files."""
        if self._edges_fd < 0:
            return
        try:
            self.flush()
        finally:
            os.close(self._edges_fd)
            os.close(self._anchors_fd)
            self._edges_fd = self._anchors_fd = -1


def anchor_line(src_url: str, links: Sequence[Link]) -> str:
    """``{"url": src_url, "links": [[dst_url, anchor, nofollow], ...]}`` as
    ``json.dumps(..., separators=(",", ":"))`` writes it, plus a newline.

    Built by hand from json's own string escaper when the URLs and anchors are
    str (22 -> 11 us for 25 links, bench/store_speed.py's pages); anything
    else goes through json.dumps, so it is encoded (or refused) as before.
    """
    try:
        body = ",".join(
            [f"[{_json_str(url)},{_json_str(text)},{'true' if nofollow else 'false'}]" for url, _, _, text, nofollow in links]
        )
        return f'{{"url":{_json_str(src_url)},"links":[{body}]}}\n'
    except TypeError:
        anchors = [[url, text, bool(nofollow)] for url, _, _, text, nofollow in links]
        return json.dumps({"url": src_url, "links": anchors}, separators=(",", ":")) + "\n"


def read_edges(path: Path) -> np.ndarray:
    """All edges of a ``links.bin`` as a structured array (fields src, dst, src_host, dst_host).

    A partial trailing record (crash) is ignored. The file is read in one go
    (32 bytes per link: 25 M links are 800 MB).
    """
    try:
        size = os.path.getsize(path)
        count = size // EDGE_DTYPE.itemsize
        return np.fromfile(path, dtype=EDGE_DTYPE, count=count)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc


def read_anchors(path: Path) -> Iterator[dict[str, Any]]:
    """The page lines of an ``anchors.jsonl.gz``; a truncated last member is skipped."""
    try:
        with Path(path).open("rb") as handle:
            for member in iter_members(handle):
                yield from _member_pages(member, path)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc


def _member_pages(member: bytes, path: Path) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(member.splitlines(), 1):
        try:
            page = json.loads(line)
        except ValueError:
            raise CorruptState(f"{path}: line {number} of a member is not JSON") from None
        if not isinstance(page, dict):
            raise CorruptState(f"{path}: line {number} of a member is not a JSON object")
        yield page
