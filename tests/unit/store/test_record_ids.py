"""Default WARC record ids: version-4 UUID URNs, unique, from random bytes drawn in bulk
(issue 18: one getrandom per 256 ids, not one per id), and fresh bytes in a forked child."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import pytest

from webgather.config import StoreConfig
from webgather.store import warc
from webgather.store.warc import Archive, RandomRecordIds

from store_helpers import page, read_records

_URN = re.compile(r"<urn:uuid:([0-9a-f-]{36})>\Z")


class CountingUrandom:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._real = os.urandom
        monkeypatch.setattr(os, "urandom", self.urandom)

    def urandom(self, n: int) -> bytes:
        self.calls += 1
        return self._real(n)


def test_an_archive_draws_random_bytes_once_for_many_record_ids(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    counting = CountingUrandom(monkeypatch)
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    for n in range(20):
        archive.write_fetch(page(f"http://example.com/{n}"))
    archive.close()
    assert counting.calls == 1  # 41 ids (20 responses, 20 requests, 1 warcinfo)
    ids = [r["headers"]["WARC-Record-ID"] for path in sorted((tmp_path / "warc").glob("*.warc.gz"))
           for r in read_records(path)]
    assert len(ids) == 41 == len(set(ids))
    for urn in ids:
        match = _URN.match(urn)
        assert match is not None and uuid.UUID(match[1]).version == 4 and str(uuid.UUID(match[1])) == match[1]


def test_ids_are_drawn_again_when_the_pool_is_used_up_or_the_process_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingUrandom(monkeypatch)
    ids = RandomRecordIds()
    drawn = [ids() for _ in range(257)]
    assert counting.calls == 2 and len(set(drawn)) == 257
    monkeypatch.setattr(os, "getpid", lambda: -7)  # as a forked child sees a new pid
    ids()
    assert counting.calls == 3
    assert _URN.match(warc.random_record_id())
