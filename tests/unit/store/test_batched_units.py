"""A run of fetches reaches the WARC and its index in one write each, byte for byte what one
write a page wrote; a failed batch leaves both files as they were before it."""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path

import pytest

from webgather.config import StoreConfig
from webgather.errors import WriteFailed
from webgather.store.cdxj import read_index
from webgather.store.crawllog import read_crawl_log
from webgather.store.warc import Archive, ArchiveRef
from webgather.store.writer import ArchiveWriter

from full_disk import FullDisk
from store_helpers import counter_ids, page, read_records

URLS = [f"http://example.com/p{i}" for i in range(6)]


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls of ``os.write`` per file suffix (".gz", ".cdxj", ...) from now on."""
    counts: Counter[str] = Counter()
    real = os.write

    def write(fd: int, data: bytes | memoryview) -> int:
        counts[os.path.splitext(os.readlink(f"/proc/self/fd/{fd}"))[1]] += 1
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    return counts


def _files(out: Path) -> tuple[bytes, bytes]:
    warc = out / "warc"
    return (warc / "webgather-n1-00000.warc.gz").read_bytes(), (warc / "index.cdxj").read_bytes()


def test_deferred_units_go_down_in_two_writes_as_the_per_page_writes_did(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    one_by_one = Archive.open(tmp_path / "a", "n1", StoreConfig(), ids=counter_ids())
    refs = [one_by_one.write_fetch(page(url)) for url in URLS]
    one_by_one.close()
    batched = Archive.open(tmp_path / "b", "n1", StoreConfig(), ids=counter_ids())
    batched.write_fetch(page(URLS[0]))  # opens the file (its warcinfo record is a write of its own)
    counts = _count_writes(monkeypatch)
    deferred = [batched.write_fetch(page(url), defer=True) for url in URLS[1:]]
    assert counts == Counter()  # nothing written before the commit
    batched.commit()
    assert counts == Counter({".gz": 1, ".cdxj": 1})
    batched.close()
    assert deferred == refs[1:]
    assert _files(tmp_path / "b") == _files(tmp_path / "a")


def test_a_failed_commit_leaves_both_files_as_before_the_batch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig(), ids=counter_ids())
    archive.write_fetch(page(URLS[0]))
    for url in URLS[1:3]:
        archive.write_fetch(page(url), defer=True)
    disk = FullDisk(monkeypatch, ".warc.gz")
    with pytest.raises(WriteFailed, match="disk full: cannot write .*warc.gz"):
        archive.commit()
    disk.full = False
    ref = archive.write_fetch(page(URLS[3]))
    archive.close()
    index = [(e.url, e.offset) for e in read_index(tmp_path / "warc" / "index.cdxj")]
    path = tmp_path / "warc" / "webgather-n1-00000.warc.gz"
    records = [(r["headers"]["WARC-Target-URI"], r["offset"]) for r in read_records(path) if r["type"] == "response"]
    assert index == records == [(URLS[0], index[0][1]), (URLS[3], ref.offset if ref else -1)]


def test_fetches_queued_while_the_writer_works_share_one_warc_write(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig(), ids=counter_ids())
    busy, release = threading.Event(), threading.Event()

    def hold(_ref: ArchiveRef | None) -> None:  # keeps the writer thread busy while the rest queue up
        busy.set()
        assert release.wait(10)

    writer.submit_fetch(page(URLS[0]), {"url": URLS[0]}, on_ref=hold)
    assert busy.wait(10)
    counts = _count_writes(monkeypatch)
    for url in URLS[1:]:
        writer.submit_fetch(page(url), {"url": url})
    release.set()
    writer.flush()
    assert counts[".gz"] == 1  # the five queued fetches: one WARC write (it was five)
    writer.close()
    assert [e["url"] for e in read_crawl_log(tmp_path / "crawl.log.jsonl")] == URLS
    entries = list(read_crawl_log(tmp_path / "crawl.log.jsonl"))
    path = tmp_path / "warc" / "webgather-n1-00000.warc.gz"
    records = {r["offset"]: r["headers"]["WARC-Target-URI"] for r in read_records(path) if r["type"] == "response"}
    assert [records[e["warc_offset"]] for e in entries] == URLS
