"""Helpers for crawling the synthetic web on loopback and reading back what the crawl wrote."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

from webgather.config import CrawlConfig
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.closure import NOT_FETCHED
from webgather.testweb.server import TestWebServer


def crawl_config(base: CrawlConfig, out: Path, resolve: Path, **politeness: Any) -> CrawlConfig:
    return dataclasses.replace(
        base,
        out_dir=str(out),
        progress=False,
        fetch=dataclasses.replace(base.fetch, resolve_file=str(resolve)),
        politeness=dataclasses.replace(base.politeness, **politeness),
    )


def final_entries(out: Path) -> list[dict[str, Any]]:
    """Final (non-retry) page and sitemap entries of every crawl log under ``out``."""
    entries: list[dict[str, Any]] = []
    for log in sorted(out.rglob("crawl.log.jsonl")):
        entries.extend(
            e for e in read_crawl_log(log)
            if not e.get("retry") and e.get("kind") in ("page", "sitemap")
        )
    return entries


def fetched_urls(entries: list[dict[str, Any]]) -> Counter[str]:
    """Contract rule 7: URLs with a final entry not blocked by robots or scope, with counts."""
    return Counter(e["url"] for e in entries if e.get("error") not in NOT_FETCHED)


def write_resolve(server: TestWebServer, directory: Path) -> Path:
    return server.write_resolve_file(directory / "resolve.txt")


def verify_warcs(out: Path) -> int:
    """Read every WARC under ``out`` whole, checking block and payload digests; count responses."""
    from warcio.archiveiterator import ArchiveIterator

    responses = 0
    files = sorted(out.rglob("*.warc.gz"))
    assert files, f"no WARC files under {out}"
    for path in files:
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                record.raw_stream.read()
                responses += record.rec_type == "response"
    return responses
