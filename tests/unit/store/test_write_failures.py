"""A full disk under each append-only file: the data stays queued, the file stays whole,
and a retry once there is room writes everything exactly once (issue 13, item 8)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from typing import Any
from pathlib import Path

import pytest

from webgather.config import StoreConfig
from webgather.errors import StoreError, WriteFailed
from webgather.frontier.journal import Journal, read_journal
from webgather.store.cdxj import read_index
from webgather.store.crawllog import CrawlLog, read_crawl_log
from webgather.store.linklog import LinkLog, read_anchors, read_edges
from webgather.store.summary import read_summary, write_summary
from webgather.store.warc import Archive
from webgather.store.writer import ArchiveWriter

from full_disk import FullDisk
from store_helpers import counter_ids, page, read_records


def _disk_full_message(path: Path) -> str:
    return f"disk full: cannot write .*{path.name}: No space left on device \\(ENOSPC\\)"


def _urls(path: Path) -> list[str]:
    return [e["url"] for e in read_crawl_log(path)]


def test_crawl_log_keeps_its_lines_on_a_full_disk_and_writes_them_once(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    path = tmp_path / "crawl.log.jsonl"
    log = CrawlLog.open(path, flush_every_entries=100)
    log.append({"url": "a"})
    log.flush()
    disk = FullDisk(monkeypatch, path.name)
    log.append({"url": "b"})
    log.append({"url": "c"})
    with pytest.raises(WriteFailed, match=_disk_full_message(path)):
        log.flush()
    assert path.read_bytes() == b'{"url":"a"}\n'  # the half-written piece was cut back
    disk.full = False
    log.append({"url": "d"})
    log.close()
    assert _urls(path) == ["a", "b", "c", "d"]


def test_link_log_keeps_edges_and_anchors_on_a_full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = LinkLog.open(tmp_path, flush_every_pages=100)
    log.append_page("http://a.com/", 1, 7, [("http://a.com/x", 2, 7, "x", False)])
    disk = FullDisk(monkeypatch, "anchors.jsonl.gz")
    with pytest.raises(WriteFailed, match="disk full: .*anchors.jsonl.gz"):
        log.flush()  # the edges went down, the anchors did not
    assert (tmp_path / "anchors.jsonl.gz").stat().st_size == 0
    disk.full = False
    log.append_page("http://a.com/x", 2, 7, [("http://a.com/", 1, 7, "home", False)])
    log.close()
    assert [tuple(e)[:2] for e in read_edges(tmp_path / "links.bin").tolist()] == [(1, 2), (2, 1)]
    assert [p["url"] for p in read_anchors(tmp_path / "anchors.jsonl.gz")] == ["http://a.com/", "http://a.com/x"]


def test_journal_keeps_its_ops_on_a_full_disk_and_writes_them_once(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    journal = Journal(tmp_path, 1)
    journal.ops.append(("take", 1))
    journal.write()
    disk = FullDisk(monkeypatch, "journal-0000000001.log")
    journal.ops.append(("take", 2))
    with pytest.raises(WriteFailed, match="disk full: cannot write frontier journal .*\\(ENOSPC\\)"):
        journal.write()
    disk.full = False
    journal.ops.append(("take", 3))
    journal.write()
    journal.close()
    assert list(read_journal(tmp_path, 1)) == [[("take", 1)], [("take", 2), ("take", 3)]]


def test_a_warc_record_that_fails_takes_its_index_line_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig(), ids=counter_ids())
    archive.write_fetch(page("http://example.com/a"))
    disk = FullDisk(monkeypatch, ".warc.gz")
    with pytest.raises(WriteFailed, match="disk full: cannot write .*warc.gz"):
        archive.write_fetch(page("http://example.com/b"))
    disk.full = False
    archive.write_fetch(page("http://example.com/c"))
    archive.close()
    index = [(e.url, e.offset) for e in read_index(tmp_path / "warc" / "index.cdxj")]
    records = [(r["headers"]["WARC-Target-URI"], r["offset"]) for r in _warc_records(tmp_path) if r["type"] == "response"]
    assert index == records and [url for url, _ in index] == ["http://example.com/a", "http://example.com/c"]


def _warc_records(out: Path) -> Iterator[dict[str, Any]]:
    for path in sorted((out / "warc").glob("*.warc.gz")):
        yield from read_records(path)


async def test_writer_reports_a_full_disk_as_write_failed_and_keeps_the_lines(monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig(), ids=counter_ids())
    await writer.write(page("http://example.com/a"), {"url": "http://example.com/a"})
    await writer.drain()
    disk = FullDisk(monkeypatch, "crawl.log.jsonl")
    await writer.write(page("http://example.com/b"), {"url": "http://example.com/b"})
    with pytest.raises(WriteFailed, match=_disk_full_message(tmp_path / "crawl.log.jsonl")):
        await writer.drain()
    with pytest.raises(WriteFailed):
        writer.submit_log({"url": "later"})
    disk.full = False  # room again before the close: the kept line goes down with it
    with pytest.raises(WriteFailed):
        writer.close()
    assert _urls(tmp_path / "crawl.log.jsonl") == ["http://example.com/a", "http://example.com/b"]


def test_other_writer_errors_stay_store_errors(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())
    writer.submit_log({"url": "http://example.com/", "bad": {1, 2}})
    with pytest.raises(StoreError, match="archive writer failed") as caught:
        writer.flush()
    assert not isinstance(caught.value, WriteFailed)
    with pytest.raises(StoreError):
        writer.close()


def test_a_summary_that_cannot_be_written_is_write_failed_and_the_old_one_stays(monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    write_summary(tmp_path, {"pages": 1})

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteFailed, match=r"disk full: cannot write .*summary.json: .*\(ENOSPC\)"):
        write_summary(tmp_path, {"pages": 2})
    assert read_summary(tmp_path) == {"pages": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
