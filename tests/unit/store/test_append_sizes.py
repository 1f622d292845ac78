"""Per-page appenders keep their file's size themselves: no ``fstat`` per record (issue 18),
and the size they keep stays the file's through a failed write, a reopen and a rotation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from webgather.config import StoreConfig
from webgather.errors import WriteFailed
from webgather.frontier.journal import Journal, read_journal
from webgather.store.cdxj import read_index
from webgather.store.warc import Archive

from full_disk import FullDisk
from store_helpers import counter_ids, page


class CountingFstat:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._real = os.fstat
        monkeypatch.setattr(os, "fstat", self.fstat)

    def fstat(self, fd: int) -> os.stat_result:
        self.calls += 1
        return self._real(fd)


def test_journal_records_ask_no_fstat_and_a_reopened_journal_appends(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    Journal(tmp_path, 1).close()
    journal = Journal(tmp_path, 1)
    counting = CountingFstat(monkeypatch)
    for n in range(5):
        journal.ops.append(("take", n))
        journal.write()
    assert counting.calls == 0
    disk = FullDisk(monkeypatch, "journal-0000000001.log")
    journal.ops.append(("take", 5))
    with pytest.raises(WriteFailed):
        journal.write()
    disk.full = False
    journal.write()
    journal.close()
    reopened = Journal(tmp_path, 1)
    reopened.ops.append(("take", 6))
    reopened.write()
    reopened.close()
    assert [ops for ops in read_journal(tmp_path, 1)] == [[("take", n)] for n in range(7)]


def test_warc_records_ask_no_fstat_and_the_index_length_stays_the_files(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig(), ids=counter_ids())
    archive.write_fetch(page("http://example.com/0"))
    counting = CountingFstat(monkeypatch)
    for n in range(1, 4):
        archive.write_fetch(page(f"http://example.com/{n}"))
    assert counting.calls == 0
    disk = FullDisk(monkeypatch, "index.cdxj")
    with pytest.raises(WriteFailed):
        archive.write_fetch(page("http://example.com/lost"))
    disk.full = False
    archive.write_fetch(page("http://example.com/4"))
    _names, index_bytes = archive.rotate()
    archive.write_fetch(page("http://example.com/5"))
    archive.close()
    index_path = tmp_path / "warc" / "index.cdxj"
    assert index_bytes == len(b"".join(index_path.read_bytes().splitlines(keepends=True)[:5]))
    assert [e.url for e in read_index(index_path)] == [f"http://example.com/{n}" for n in range(6)]
