"""UrlState: records round-trip, cycles, plan arrays."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgather.errors import CorruptState
from webgather.recrawl.observe import UrlRecord
from webgather.recrawl.state import CycleRow, UrlState
from webgather.store.warc import ArchiveRef

from recrawl_records import T0

REF = ArchiveRef("f.warc.gz", 10, 100, "<urn:uuid:1>", "sha1:AAAA", "2023-11-14T22:13:20Z", "http://a.test/")


def test_records_round_trip_and_cycles(tmp_path: Path) -> None:
    state = UrlState.open(tmp_path / "urls.sqlite")
    big = UrlRecord(2**64 - 5, "http://a.test/", "page", 2, T0, T0 + 5, T0, 200, '"e"', "Tue", "sha1:AAAA",
                    2**63 + 7, REF, "ld", 3, 1, ((5.0, True), (1.5, False)), 0.01, 0, None, None, None, None)
    state.put(big, 1, {"fetches": 1, "zero": 0})
    assert state.get(big.fp) == big
    assert state.get(12345) is None
    small = UrlRecord(7, "http://b.test/", last_fetch_s=T0)
    state.put(small, 1, {"fetches": 1})
    assert state.get(7) == small
    assert state.cycle_counts(1) == {"fetches": 2}
    arrays = state.plan_arrays()
    assert dict(zip(arrays.fp.tolist(), arrays.n_obs.tolist())) == {7: 0, 2**64 - 5: 2}
    state.plan_cycle(CycleRow(1, "planned", T0, None, "optimal", 10, 1, 0), [7])
    assert [r.url for r in state.pending_records(1)] == ["http://b.test/"]
    assert state.plan_arrays().fp.tolist() == [2**64 - 5]
    state.set_cycle_status(1, "running")
    assert state.last_cycle() == CycleRow(1, "running", T0, None, "optimal", 10, 1, 0)
    assert state.totals() == {"urls": 2, "active": 2, "dead": 0, "near_duplicates": 0, "pending": 1}
    assert state.clear_pending() == 1
    assert list(state.simhashes()) == [(big.fp, big.simhash)]
    state.close()
    again = UrlState.open(tmp_path / "urls.sqlite")
    assert again.get(big.fp) == big
    again.close()


def test_garbage_is_corrupt_state(tmp_path: Path) -> None:
    path = tmp_path / "urls.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CorruptState):
        UrlState.open(path)
