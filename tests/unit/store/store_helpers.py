"""Helpers for the store tests (imported by name; pytest puts this directory on sys.path)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from webgather.fetch.model import FetchResult

T0 = 1_700_000_000.0


def page(
    url: str = "http://example.com/a",
    body: bytes = b"<html><a href='/b'>b</a></html>",
    status: int | None = 200,
    **extra: Any,
) -> FetchResult:
    """A typical fetched HTML page."""
    fields: dict[str, Any] = dict(
        url=url,
        started_at=T0,
        elapsed_s=0.05,
        status=status,
        reason="OK" if status == 200 else "",
        request_headers=(("Host", "example.com"), ("User-Agent", "webgather-test"), ("Accept", "*/*")),
        response_headers=(("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))),
        raw_body=body if status is not None else b"",
        body=body if status is not None else b"",
        peer_ip="127.0.0.1",
    )
    fields.update(extra)
    return FetchResult(**fields)


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def counter_ids() -> Callable[[], str]:
    state = {"n": 0}

    def next_id() -> str:
        state["n"] += 1
        return f"<urn:uuid:00000000-0000-4000-8000-{state['n']:012d}>"

    return next_id


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every record of a WARC, via warcio, with raw block bytes and offsets."""
    with path.open("rb") as handle:
        iterator = ArchiveIterator(handle, no_record_parse=True, check_digests=False)
        for record in iterator:
            block = record.raw_stream.read()
            yield {
                "type": record.rec_type,
                "headers": dict(record.rec_headers.headers),
                "block": block,
                "offset": iterator.get_record_offset(),
                "record": record,
            }
            iterator.read_to_end(record)
