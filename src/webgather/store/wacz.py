"""A crawl as one WACZ file: what Browsertrix writes and ReplayWeb.page opens in a browser, no server.

WACZ 1.1.1 (https://specs.webrecorder.net/wacz/1.1.1/) is a ZIP holding:

* ``archive/*.warc.gz``: the crawl's WARC files, stored (not deflated: a reader seeks into them);
* ``indexes/index.cdx``: every node's CDXJ lines, sorted, with 304 revisits pointed at their
  originals (:func:`webgather.store.pywbcoll.repoint_not_modified`, as ``webgather replay`` does);
  a line's ``filename`` is the WARC's name in ``archive/`` (node ids make them unique);
* ``pages/pages.jsonl``: a header line, then one line per HTML page crawled with 200 (the crawl
  logs' ``page`` entries, not requisites): its URL, its capture time (the WARC-Date) and its title
  (read from the archived response);
* ``datapackage.json``: every file above with its size and SHA-256, and ``datapackage-digest.json``
  the hash of that.

The WARCs are read in place (``DIR/warc`` of one node, ``DIR/nodes/*/warc`` of a cluster's
directory) and copied into the ZIP once, hashed on the way. The file is written next to its
name and renamed into place, so an interrupted export leaves no half file under that name.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from webgather.errors import StoreError, WriteFailed
from webgather.parse.links import parse_page
from webgather.store.cdxj import INDEX_NAME
from webgather.store.crawllog import read_crawl_log
from webgather.store.pywbcoll import crawl_indexes, relocate_line, repoint_not_modified

__all__ = ["WACZ_VERSION", "WaczSummary", "page_entries", "unpack_wacz", "write_wacz"]

WACZ_VERSION = "1.1.1"
_CHUNK = 1 << 20
_FILENAME_FIELD = '"filename":"'
_HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass(frozen=True, slots=True)
class WaczSummary:
    """What :func:`write_wacz` packed."""

    path: Path
    warc_files: int
    captures: int
    """Index lines (responses and revisits)."""
    pages: int
    """Lines of pages.jsonl after its header."""
    bytes: int


@dataclass(frozen=True, slots=True)
class _Page:
    url: str
    ts: str
    title: str


def write_wacz(crawl_dir: Path, out: Path, *, software: str, title: str | None = None) -> WaczSummary:
    """Pack the crawl in ``crawl_dir`` into the WACZ ``out``. :class:`StoreError` (one line) for a
    directory that is not a crawl's; :class:`WriteFailed` if ``out`` cannot be written."""
    crawl_dir = crawl_dir.resolve()
    warcs, index_lines = _archive(crawl_dir)
    pages = list(page_entries(crawl_dir, warcs))
    temp = out.with_name(out.name + ".tmp")
    try:
        with zipfile.ZipFile(temp, "w", allowZip64=True) as package:
            resources = [_add_file(package, f"archive/{name}", path) for name, path in sorted(warcs.items())]
            resources.append(_add_bytes(package, "indexes/index.cdx", "".join(index_lines).encode("utf-8")))
            resources.append(_add_bytes(package, "pages/pages.jsonl", _pages_jsonl(pages)))
            datapackage = _datapackage(resources, pages, software, title or crawl_dir.name)
            package.writestr(_info("datapackage.json", zipfile.ZIP_DEFLATED), datapackage)
            digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(datapackage).hexdigest()}
            package.writestr(_info("datapackage-digest.json", zipfile.ZIP_DEFLATED), json.dumps(digest))
        os.replace(temp, out)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise WriteFailed(f"cannot write {out}: {exc.strerror or exc}") from None
    return WaczSummary(out, len(warcs), len(index_lines), len(pages), out.stat().st_size)


def unpack_wacz(wacz: Path, into: Path) -> Path:
    """A crawl directory (``into/warc``: the WACZ's WARC files and its index as ``index.cdxj``) made from
    ``wacz``, for ``webgather replay``. Only ``archive/NAME.warc[.gz]`` and the ``indexes/`` CDX(J) file
    are taken (by their base names: nothing is written outside ``into``). :class:`StoreError` (one line)
    for a file that is not a ZIP or holds no WARC or index."""
    warc_dir = into / "warc"
    try:
        warc_dir.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wacz) as package:
            names = package.namelist()
            warcs = [n for n in names if n.startswith("archive/") and n.endswith((".warc", ".warc.gz"))]
            indexes = [n for n in names if n in ("indexes/index.cdx", "indexes/index.cdxj")]
            if not warcs or not indexes:
                raise StoreError(f"{wacz} holds no archive/*.warc.gz or no indexes/index.cdx (a WACZ webgather reads)")
            for name in warcs:
                _extract(package, name, warc_dir / Path(name).name)
            _extract(package, indexes[0], warc_dir / INDEX_NAME)
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise StoreError(f"{wacz} is not a WACZ (ZIP) file: {exc}") from None
    except OSError as exc:
        raise StoreError(f"cannot unpack {wacz}: {exc.strerror or exc}") from None
    return into


def _extract(package: zipfile.ZipFile, name: str, target: Path) -> None:
    with package.open(name) as source, target.open("wb") as sink:
        shutil.copyfileobj(source, sink, _CHUNK)


def _archive(crawl_dir: Path) -> tuple[dict[str, Path], list[str]]:
    """The crawl's WARC files by name, and its index lines (sorted, 304s repointed)."""
    indexes = crawl_indexes(crawl_dir)
    if not indexes:
        raise StoreError(f"{crawl_dir} holds no WARC index (warc/index.cdxj or nodes/*/warc/index.cdxj): "
                         "is it a crawl's --out?")
    warcs: dict[str, Path] = {}
    lines: list[str] = []
    for index in indexes:
        for path in sorted(index.parent.glob("*.warc.gz")):
            if warcs.setdefault(path.name, path) != path:
                raise StoreError(f"two WARC files are named {path.name} ({warcs[path.name]}, {path})")
        lines.extend(_whole_lines(index))
    if not lines:
        raise StoreError(f"the WARC index of {crawl_dir} is empty: the crawl archived no response yet")
    lines.sort()
    lines = repoint_not_modified(lines)
    missing = {line.rpartition(_FILENAME_FIELD)[2].partition('"')[0] for line in lines} - set(warcs)
    if missing:
        raise StoreError(f"the index names WARC files that are not there: {', '.join(sorted(missing)[:3])}")
    return warcs, [relocate_line(line, "") for line in lines]


def _whole_lines(index: Path) -> list[str]:
    try:
        with index.open("r", encoding="utf-8", newline="\n") as handle:
            return [line for line in handle if line.endswith("\n")]
    except OSError as exc:
        raise StoreError(f"cannot read index {index}: {exc.strerror or exc}") from None


def page_entries(crawl_dir: Path, warcs: dict[str, Path]) -> Iterator[_Page]:
    """Each HTML page crawled with status 200 (crawl-log order), with its capture time and title."""
    logs = [crawl_dir / "crawl.log.jsonl", *sorted((crawl_dir / "nodes").glob("*/crawl.log.jsonl"))]
    for log in logs:
        if not log.is_file():
            continue
        for entry in read_crawl_log(log):
            if _is_page(entry) and entry["warc_file"] in warcs:
                page = _read_page(warcs[entry["warc_file"]], entry)
                if page is not None:
                    yield page


def _is_page(entry: dict[str, Any]) -> bool:
    content_type = (entry.get("content_type") or "").partition(";")[0].strip().lower()
    return (entry.get("kind") == "page" and entry.get("status") == 200 and content_type in _HTML_TYPES
            and isinstance(entry.get("warc_file"), str) and isinstance(entry.get("warc_offset"), int))


def _read_page(warc: Path, entry: dict[str, Any]) -> _Page | None:
    """The page's capture time and title from its response record (None if it cannot be read)."""
    try:
        with warc.open("rb") as handle:
            handle.seek(int(entry["warc_offset"]))
            raw = handle.read(int(entry.get("warc_length") or 0) or _CHUNK * 16)
        for record in ArchiveIterator(io.BytesIO(raw)):
            if record.rec_type != "response":
                return None
            stamp = record.rec_headers.get_header("WARC-Date") or ""
            body = record.content_stream().read()
            content_type = record.http_headers.get_header("Content-Type") if record.http_headers else None
            url = str(entry["url"])
            return _Page(url, stamp, parse_page(url, body, content_type, want_text=False).title)
    except (OSError, ArchiveLoadFailed, ValueError, EOFError):
        return None
    return None


def _pages_jsonl(pages: list[_Page]) -> bytes:
    lines = [json.dumps({"format": "json-pages-1.0", "id": "pages", "title": "All Pages"})]
    for number, page in enumerate(pages):
        line: dict[str, str] = {"id": f"p{number}", "url": page.url, "ts": page.ts}
        if page.title:
            line["title"] = page.title
        lines.append(json.dumps(line, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _datapackage(resources: list[dict[str, Any]], pages: list[_Page], software: str, title: str) -> bytes:
    package: dict[str, Any] = {
        "profile": "data-package",
        "resources": resources,
        "wacz_version": WACZ_VERSION,
        "software": software,
        "created": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "title": title,
    }
    if pages:
        package["mainPageUrl"], package["mainPageDate"] = pages[0].url, pages[0].ts
    return json.dumps(package, indent=2).encode("utf-8")


def _info(name: str, compress_type: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=dt.datetime.now(dt.timezone.utc).timetuple()[:6])
    info.compress_type = compress_type
    return info


def _resource(path: str, size: int, sha256: str) -> dict[str, Any]:
    return {"name": path.rpartition("/")[2].lower(), "path": path, "hash": f"sha256:{sha256}", "bytes": size}


def _add_bytes(package: zipfile.ZipFile, path: str, data: bytes) -> dict[str, Any]:
    package.writestr(_info(path, zipfile.ZIP_DEFLATED), data)
    return _resource(path, len(data), hashlib.sha256(data).hexdigest())


def _add_file(package: zipfile.ZipFile, path: str, source: Path) -> dict[str, Any]:
    """Copy ``source`` into the ZIP stored (a reader seeks into a WARC), hashing it on the way."""
    info = _info(path, zipfile.ZIP_STORED)
    info.file_size = source.stat().st_size
    digest, size = hashlib.sha256(), 0
    with source.open("rb") as handle, package.open(info, "w", force_zip64=info.file_size > 0x7FFF0000) as sink:
        size = _copy(handle, sink, digest)
    return _resource(path, size, digest.hexdigest())


def _copy(source: IO[bytes], sink: IO[bytes], digest: Any) -> int:
    size = 0
    while chunk := source.read(_CHUNK):
        digest.update(chunk)
        sink.write(chunk)
        size += len(chunk)
    return size
