"""Builds the golden WARCs: fixed ids, dates from fixed fetch times (warcio's FixedTestRecordMixin habit).

Regenerate after an intended format change, then read the diff of the
uncompressed file line by line before committing it:

    .venv/bin/python tests/golden/golden_store.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from webgather.config import StoreConfig
from webgather.fetch.model import FetchResult
from webgather.store.gzmember import DEFLATE_BACKEND
from webgather.store.warc import Archive

DATA = Path(__file__).parent / "data"
GOLDEN_BACKEND = "isal 1.9.1"
"""Deflate that made the .gz golden; another one may deflate the same text differently."""


def fixed_ids() -> "callable":  # type: ignore[valid-type]
    count = [0]

    def next_id() -> str:
        count[0] += 1
        return f"<urn:uuid:12345678-feb0-4000-8000-{count[0]:012d}>"

    return next_id


def results() -> list[FetchResult]:
    request = (("Host", "example.com"), ("User-Agent", "webgather/0.1"), ("Accept-Encoding", "gzip"))
    return [
        FetchResult(
            url="http://example.com/", started_at=946684800.0, elapsed_s=0.1, status=200, reason="OK",
            request_headers=request,
            response_headers=(("Content-Type", "text/html; charset=utf-8"), ("Content-Length", "44"), ("ETag", '"v1"')),
            raw_body=b'<html><a href="/next">next</a></html>\nhello\n', peer_ip="192.0.2.1",
        ),
        FetchResult(
            url="http://example.com/big", started_at=946684801.5, elapsed_s=0.2, status=200, reason="OK",
            request_headers=request, response_headers=(("Content-Type", "application/octet-stream"), ("Content-Length", "1000")),
            raw_body=b"0123456789" * 3, truncated=True, error="too_large", peer_ip="192.0.2.1",
        ),
    ]


def build(out: Path, gzipped: bool) -> Path:
    """Write the golden sequence into ``out``; return the WARC path."""
    archive = Archive.open(out, "golden", StoreConfig(warc_gzip=gzipped), ids=fixed_ids())
    first, big = results()
    original = archive.write_fetch(first)
    archive.write_fetch(big)
    again = FetchResult(
        url=first.url, started_at=946771200.0, elapsed_s=0.1, status=304, reason="Not Modified",
        request_headers=first.request_headers + (("If-None-Match", '"v1"'),), response_headers=(("ETag", '"v1"'),),
        peer_ip="192.0.2.1",
    )
    assert original is not None
    archive.write_revisit(again, original, "server-not-modified")
    archive.close()
    (path,) = (out / "warc").glob("*.warc*")
    return path


def main() -> None:
    if DEFLATE_BACKEND != GOLDEN_BACKEND:
        sys.exit(f"golden .gz files are made with {GOLDEN_BACKEND}, this is {DEFLATE_BACKEND}: edit GOLDEN_BACKEND")
    for gzipped in (False, True):
        temp = Path(tempfile.mkdtemp())
        try:
            path = build(temp, gzipped)
            shutil.copy(path, DATA / path.name)
            shutil.copy(temp / "warc" / "index.cdxj", DATA / ("index.gz.cdxj" if gzipped else "index.cdxj"))
        finally:
            shutil.rmtree(temp)


if __name__ == "__main__":
    main()
