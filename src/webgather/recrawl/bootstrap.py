"""Start the re-crawl state of a crawl made without it (plain ``webgather crawl``).

A node directory whose ``state/urls.sqlite`` has no URLs but whose crawl log
has fetches gets one record per URL from its last final fetch: status,
digest, fetch time, and from the archived response record (read with warcio
at the logged offset) its record id and date (what a revisit record refers
to) and the page's ETag and Last-Modified (what a conditional request sends).
No SimHash (the text is not re-parsed): a page gets one when it next changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from webgather.recrawl.observe import UrlRecord, content_age_s
from webgather.recrawl.state import UrlState
from webgather.store.crawllog import CRAWL_LOG_NAME, read_crawl_log
from webgather.store.warc import ArchiveRef
from webgather.urls import fingerprint

__all__ = ["import_crawl"]

_KINDS = ("page", "sitemap")


def import_crawl(state: UrlState, out_dir: Path) -> int:
    """Records for the fetches of ``out_dir``'s crawl log (only into an empty state); returns how many."""
    log = Path(out_dir) / CRAWL_LOG_NAME
    if state.totals()["urls"] or not log.exists():
        return 0
    last: dict[str, dict[str, Any]] = {}
    for entry in read_crawl_log(log):
        if not entry.get("retry") and entry.get("kind") in _KINDS and entry.get("status") is not None:
            last[str(entry["url"])] = entry
    warc_dir = Path(out_dir) / "warc"
    records = [_record(url, entry, _read_ref(warc_dir, url, entry)) for url, entry in last.items()]
    return state.put_many(records, 0, "imported")


def _record(url: str, entry: dict[str, Any], found: tuple[ArchiveRef, str | None, str | None] | None) -> UrlRecord:
    t = float(entry["fetched_at"])
    ref, etag, modified = found if found is not None else (None, None, None)
    return UrlRecord(
        fingerprint(url), url, str(entry.get("kind") or "page"), int(entry.get("depth") or 0),
        first_fetch_s=t, last_fetch_s=t, last_change_s=t, status=int(entry["status"]),
        etag=etag, last_modified=modified, digest=entry.get("digest"), original=ref, visits=1,
        first_age_s=content_age_s(modified, t),
    )


def _read_ref(warc_dir: Path, url: str, entry: dict[str, Any]) -> tuple[ArchiveRef, str | None, str | None] | None:
    name, offset, length = entry.get("warc_file"), entry.get("warc_offset"), entry.get("warc_length")
    if not name or offset is None or length is None:
        return None
    # Imported here: a crawl that imports no earlier crawl log never needs warcio (the run
    # path's imports measured 48.8 -> 48.3 MB of RSS without it).
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    try:
        with (warc_dir / str(name)).open("rb") as stream:
            stream.seek(int(offset))
            record = next(iter(ArchiveIterator(stream)), None)
            if record is None or record.rec_type != "response":
                return None
            head = record.rec_headers
            ref = ArchiveRef(str(name), int(offset), int(length), str(head.get_header("WARC-Record-ID")),
                             str(head.get_header("WARC-Payload-Digest")), str(head.get_header("WARC-Date")), url)
            http = record.http_headers
            return ref, http.get_header("ETag") if http else None, http.get_header("Last-Modified") if http else None
    except (OSError, ArchiveLoadFailed, StopIteration, ValueError):
        return None
