"""CDXJ index lines (the pywb convention), keyed by SURT (:mod:`webgather.surtkey`). Line building is pure.

A line is ``<surt> <14-digit timestamp> <json>`` with the JSON block
``{"url", "mime", "status", "digest", "length", "offset", "filename"}``; as in
pywb, ``status``, ``length`` and ``offset`` are strings, ``digest`` is the
bare base32 SHA-1 (no ``sha1:``) and a revisit's ``mime`` is ``warc/revisit``.
Lines are appended in write order while crawling; :func:`sort_index` writes a
sorted copy (``index.sorted.cdxj``) when called (the crawl does not call it:
``webgather replay`` sorts a merge of every node's index for pywb, see
:mod:`webgather.store.pywbcoll`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from json.encoder import encode_basestring_ascii
from pathlib import Path

from webgather.errors import CorruptState, StoreError
from webgather.surtkey import surt

__all__ = ["CdxjEntry", "INDEX_NAME", "SORTED_NAME", "cdxj_line", "parse_line", "read_index", "sort_index", "surt", "timestamp14"]

INDEX_NAME = "index.cdxj"
SORTED_NAME = "index.sorted.cdxj"
_json_str = encode_basestring_ascii
"""A str as a JSON string literal, as json.dumps writes it (ensure_ascii)."""


@dataclass(frozen=True, slots=True)
class CdxjEntry:
    """One index line, typed."""

    key: str
    timestamp: str
    url: str
    mime: str
    status: int | None
    digest: str
    length: int
    offset: int
    filename: str


@lru_cache(maxsize=16)
def timestamp14(warc_date: str) -> str:
    """``2024-05-01T12:00:00Z`` -> ``20240501120000`` (cached: pages of one second share a date)."""
    digits = "".join(ch for ch in warc_date if ch.isdigit())[:14]
    if len(digits) != 14:
        raise StoreError(f"not a WARC date: {warc_date!r}")
    return digits


def cdxj_line(
    url: str, warc_date: str, mime: str, status: int | None, digest: str, length: int, offset: int, filename: str
) -> str:
    """One index line (ending in a newline) for a response or revisit record.

    The JSON block is what ``json.dumps(block, separators=(",", ":"))`` writes
    for the dict of the module docstring, built by hand from the same string
    escaper (13 -> 7 us a line, bench/store_speed.py's pages).
    """
    state = "-" if status is None else str(status)
    return (
        f'{surt(url)} {timestamp14(warc_date)} {{"url":{_json_str(url)},"mime":{_json_str(mime or "unk")},'
        f'"status":{_json_str(state)},"digest":{_json_str(digest.removeprefix("sha1:"))},'
        f'"length":"{length}","offset":"{offset}","filename":{_json_str(filename)}}}\n'
    )


def parse_line(line: str) -> CdxjEntry:
    """Parse one index line; :class:`CorruptState` if it is not one."""
    try:
        key, timestamp, text = line.rstrip("\n").split(" ", 2)
        block = json.loads(text)
        status = block.get("status", "-")
        return CdxjEntry(
            key, timestamp, block["url"], block["mime"], None if status == "-" else int(status),
            block["digest"], int(block["length"]), int(block["offset"]), block["filename"],
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptState(f"not a CDXJ line: {line[:200]!r} ({exc})") from None


def read_index(path: Path) -> Iterator[CdxjEntry]:
    """Entries of an index file in file order; a partial last line (crash) is skipped."""
    try:
        with path.open("r", encoding="utf-8", newline="\n") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    return
                yield parse_line(line)
    except OSError as exc:
        raise StoreError(f"cannot read index {path}: {exc.strerror}") from exc


def sort_index(warc_dir: Path) -> Path:
    """Write ``index.sorted.cdxj`` (lines sorted by key, then timestamp) beside the index.

    Sorts in memory: about 300 bytes a record, so 10 M records need ~3 GB.
    """
    source = Path(warc_dir) / INDEX_NAME
    target = Path(warc_dir) / SORTED_NAME
    try:
        with source.open("r", encoding="utf-8", newline="\n") as handle:
            lines = [line for line in handle if line.endswith("\n")]
        lines.sort()
        temp = target.with_suffix(".tmp")
        with temp.open("w", encoding="utf-8", newline="\n") as out:
            out.writelines(lines)
        os.replace(temp, target)
    except OSError as exc:
        raise StoreError(f"cannot sort index {source}: {exc.strerror}") from exc
    return target
