"""Helpers for the re-crawl tests (imported by name; pytest puts this directory on sys.path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from webgather.fetch.model import FetchResult

T0 = 1_700_000_000.0


def result(url: str, body: bytes = b"", status: int = 200, t: float = T0, **headers: str) -> FetchResult:
    """A fetched page; ``headers`` become response headers (``ETag="..."``, ``Last_Modified=...``)."""
    fields = tuple((k.replace("_", "-"), v) for k, v in headers.items())
    return FetchResult(
        url=url, started_at=t, elapsed_s=0.01, status=status, reason="OK",
        request_headers=(("Host", "example.test"),),
        response_headers=(("Content-Type", "text/html"), *fields),
        raw_body=body, body=body, peer_ip="127.0.0.1",
    )


def html(words: str) -> bytes:
    return f"<html><body><p>{words}</p></body></html>".encode()


def warc_records(out: Path) -> list[dict[str, Any]]:
    """Every response/revisit record under ``out/warc`` in write order, read with warcio."""
    records = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                if record.rec_type in ("response", "revisit"):
                    h = record.rec_headers
                    records.append({
                        "type": record.rec_type, "id": h.get_header("WARC-Record-ID"),
                        "uri": h.get_header("WARC-Target-URI"), "digest": h.get_header("WARC-Payload-Digest"),
                        "profile": h.get_header("WARC-Profile"), "refers_to": h.get_header("WARC-Refers-To"),
                        "refers_uri": h.get_header("WARC-Refers-To-Target-URI"),
                        "refers_date": h.get_header("WARC-Refers-To-Date"), "date": h.get_header("WARC-Date"),
                        "status": record.http_headers.get_statuscode() if record.http_headers else None,
                    })
                record.raw_stream.read()
    return records


def check_revisits_point_at_latest_originals(records: list[dict[str, Any]]) -> int:
    """Every revisit refers to the latest response record of its URL before it; returns revisits seen."""
    latest: dict[str, dict[str, Any]] = {}
    revisits = 0
    for rec in records:
        if rec["type"] == "response":
            latest[rec["uri"]] = rec
            continue
        revisits += 1
        original = latest[rec["uri"]]
        assert rec["refers_to"] == original["id"], rec
        assert rec["refers_uri"] == original["uri"]
        assert rec["refers_date"] == original["date"]
        assert rec["digest"] == original["digest"]
    return revisits
