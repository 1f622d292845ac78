"""A pywb collection over a crawl's WARCs, in place: one merged, sorted index and a config file.

pywb (``wayback``) reads ``config.yaml`` from its working directory. A
collection there may name its index file and its archive directory directly
(``index`` and ``archive_paths``), so nothing is copied or linked: the WARCs
stay where the crawl wrote them (``DIR/warc`` for one node, ``DIR/nodes/*/warc``
for a cluster) and pywb opens them by ``archive_paths`` + the ``filename`` of
an index line.

The crawler's indexes are in write order, one per node, with bare file names.
pywb binary-searches a CDXJ file, so the collection's index is every node's
lines, ``filename`` made relative to DIR (``nodes/w0/warc/x.warc.gz``), sorted,
with 304 revisits pointed at their originals (:func:`repoint_not_modified`).
Line relocation, that pointing and the config text are pure;
:func:`build_collection` is the file shell.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from webgather.errors import StoreError
from webgather.store.cdxj import INDEX_NAME, parse_line

__all__ = [
    "COLLECTION", "PywbCollection", "build_collection", "crawl_indexes", "pywb_config", "relocate_line", "repoint_not_modified",
]

COLLECTION = "crawl"
"""The collection's name: its pages are at ``/crawl/<timestamp>/<url>``."""
_FILENAME_FIELD = '"filename":"'
_REVISIT = '"mime":"warc/revisit"'
_NOT_MODIFIED = '"status":"304"'


@dataclass(frozen=True, slots=True)
class PywbCollection:
    """What :func:`build_collection` wrote, and what the replay command tells the user."""

    root: Path
    """pywb's working directory (holds ``config.yaml`` and ``index.cdxj``)."""
    captures: int
    """Index lines (responses and revisits) in the collection."""
    warc_files: int
    first_page: tuple[str, str] | None
    """(timestamp, url) of the first HTML page archived with status 200, if any: a page to open."""


def crawl_indexes(crawl_dir: Path) -> list[Path]:
    """The index files of a crawl: ``DIR/warc/index.cdxj`` and ``DIR/nodes/*/warc/index.cdxj``."""
    found = [crawl_dir / "warc" / INDEX_NAME] + sorted((crawl_dir / "nodes").glob(f"*/warc/{INDEX_NAME}"))
    return [path for path in found if path.is_file()]


def relocate_line(line: str, prefix: str) -> str:
    """``line`` with ``prefix`` (a directory relative to the crawl, ending in ``/``) before its filename.

    The JSON block is edited as text: the crawler writes ``"filename":"`` once,
    last (:func:`webgather.store.cdxj.cdxj_line`), and a URL's quote is escaped.
    """
    head, sep, tail = line.rpartition(_FILENAME_FIELD)
    if not sep:
        raise StoreError(f"index line without a filename: {line[:200]!r}")
    return f"{head}{sep}{prefix}{tail}"


def repoint_not_modified(sorted_lines: list[str]) -> list[str]:
    """Sorted lines with each 304 revisit pointing at its original response's record, or left out.

    pywb replays a revisit whose own HTTP status is 3xx with that status and
    no body (``resolvingloader``: "if redirect, don't load payload"), so the
    newest capture of a page the server answered 304 for would show as an
    empty 304. The line keeps the revisit's timestamp (the server said the
    page was unchanged then) and takes the location, status and type of the
    latest earlier response of the same key with the same digest; a revisit
    without one in the archive has nothing to show and is left out.
    """
    out: list[str] = []
    key = ""
    originals: dict[str, str] = {}  # digest -> JSON block of the latest response of ``key``
    for line in sorted_lines:
        line_key, stamp, block = line.split(" ", 2)
        if line_key != key:
            key, originals = line_key, {}
        if _REVISIT not in block:
            originals[parse_line(line).digest] = block
            out.append(line)
        elif _NOT_MODIFIED not in block:
            out.append(line)
        elif (original := originals.get(parse_line(line).digest)) is not None:
            out.append(f"{line_key} {stamp} {original}")
    return out


def pywb_config(index_path: Path, archive_root: Path) -> str:
    """``config.yaml`` for pywb: one collection, its index and its archive directory.

    Paths are written as JSON strings (valid YAML flow scalars whatever they hold).
    """
    return (
        "# written by webgather replay: the crawl's WARCs, served in place\n"
        "collections:\n"
        f"  {COLLECTION}:\n"
        f"    index: {json.dumps(str(index_path))}\n"
        f"    archive_paths: {json.dumps(str(archive_root).rstrip('/') + '/')}\n"
    )


def build_collection(crawl_dir: Path, root: Path) -> PywbCollection:
    """Write ``root/index.cdxj`` and ``root/config.yaml`` for the crawl in ``crawl_dir``.

    :class:`StoreError` (one line) if the crawl has no index or a file cannot be read or written.
    """
    crawl_dir = crawl_dir.resolve()
    indexes = crawl_indexes(crawl_dir)
    if not indexes:
        raise StoreError(f"{crawl_dir} holds no WARC index (warc/{INDEX_NAME} or nodes/*/warc/{INDEX_NAME}): is it a crawl's --out?")
    lines: list[str] = []
    for index in indexes:
        prefix = index.parent.relative_to(crawl_dir).as_posix() + "/"
        lines.extend(relocate_line(line, prefix) for line in _whole_lines(index))
    if not lines:
        raise StoreError(f"the WARC index of {crawl_dir} is empty: the crawl archived no response yet")
    first_page = _first_page(lines)
    lines.sort()
    lines = repoint_not_modified(lines)
    index_path = root / INDEX_NAME
    _write_text(index_path, "".join(lines))
    _write_text(root / "config.yaml", pywb_config(index_path, crawl_dir))
    files = {line.rpartition(_FILENAME_FIELD)[2] for line in lines}
    return PywbCollection(root, len(lines), len(files), first_page)


def _whole_lines(index: Path) -> list[str]:
    """The index's complete lines (a partial last line, from a crash, is left out)."""
    try:
        with index.open("r", encoding="utf-8", newline="\n") as handle:
            return [line for line in handle if line.endswith("\n")]
    except OSError as exc:
        raise StoreError(f"cannot read index {index}: {exc.strerror or exc}") from None


def _first_page(lines: list[str]) -> tuple[str, str] | None:
    for line in lines:
        entry = parse_line(line)
        if entry.status == 200 and entry.mime == "text/html":
            return entry.timestamp, entry.url
    return None


def _write_text(path: Path, text: str) -> None:
    temp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(text, encoding="utf-8", newline="\n")
        os.replace(temp, path)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
