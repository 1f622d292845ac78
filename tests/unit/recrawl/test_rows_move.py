"""Re-crawl rows that move with their bucket: wire format, merge in the state, budget split and grants,
and death recovery taking them from the dead node's state."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of
from webgather.cluster.wire import Handoff, decode, encode_handoff
from webgather.config import ClusterConfig, CrawlConfig
from webgather.errors import ClusterError
from webgather.frontier.bucket import BucketState
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.recrawl.observe import UrlRecord
from webgather.recrawl.policy import apportion
from webgather.recrawl.rows import decode_rows, encode_rows
from webgather.recrawl.state import UrlState
from webgather.runtime.member.budget import CycleBudget
from webgather.runtime.durability.recovery import recover_node
from webgather.store.warc import ArchiveRef
from webgather.urls import fingerprint, host_key

from recrawl_records import T0

M = 64
REF = ArchiveRef("f.warc.gz", 10, 100, "<urn:uuid:1>", "sha1:AAAA", "2023-11-14T22:13:20Z", "http://a.test/")


def _bucket(url: str) -> int:
    return bucket_of(host_key(url), M)


def _record(url: str, t: float, visits: int = 1) -> UrlRecord:
    return UrlRecord(fingerprint(url), url, "page", 1, T0, t, T0, 200, '"e"', None, "sha1:AAAA", 2**63 + 9, REF,
                     None, visits, 0, ((3600.0, False),), 1e-4, 0, None, None, None, 2, 120.0)


def test_a_handoff_carries_rows_and_stays_type_2_without_them() -> None:
    state = BucketState(_bucket("http://a.test/"), M, (CrawlItem("http://a.test/x", fingerprint("http://a.test/x")),))
    rows = (_record("http://a.test/", T0 + 5), UrlRecord(7, "http://a.test/y"))
    message = decode(encode_handoff("n1", 3, state, rows))
    assert isinstance(message, Handoff) and message.state.items == state.items
    assert [r.url for r in message.rows] == ["http://a.test/", "http://a.test/y"]
    assert message.rows[0] == rows[0]
    assert math.isnan(message.rows[1].last_fetch_s) and message.rows[0].original == REF
    plain = encode_handoff("n1", 3, state)
    assert plain[3] == 2 and encode_handoff("n1", 3, state, ()) == plain
    assert decode(plain).rows == ()  # type: ignore[union-attr]
    bad = encode_handoff("n1", 3, state, rows).replace(b'"http://a.test/y"', b'12345678901234567')
    with pytest.raises(ClusterError, match="url is not a string"):
        decode(bad)


def test_row_decoding_refuses_garbage() -> None:
    good = encode_rows([_record("http://a.test/", T0)])
    assert decode_rows(good)[0].url == "http://a.test/"
    for bad in (b"{", b"{}", b"[[1]]", good.replace(b"200", b"-3"), good.replace(b"[3600.0,false]", b"[1,2]")):
        with pytest.raises(ValueError):
            decode_rows(bad)


def test_state_exports_merges_newest_and_drops_by_bucket(tmp_path: Path) -> None:
    path = tmp_path / "urls.sqlite"
    old = sqlite3.connect(path)  # a state written before rows had buckets
    old.execute("CREATE TABLE urls (fp INTEGER PRIMARY KEY, url TEXT NOT NULL, kind TEXT, depth INTEGER,"
                " first_fetch_s REAL, last_fetch_s REAL, last_change_s REAL, status INTEGER, etag TEXT,"
                " last_modified TEXT, digest TEXT, simhash INTEGER, original TEXT, links_digest TEXT, visits INTEGER,"
                " changes INTEGER, history TEXT, rate_per_s REAL, failures INTEGER, dead TEXT, dead_cycle INTEGER,"
                " near_dup_of TEXT, pending_cycle INTEGER, first_age_s REAL)")
    old.execute("INSERT INTO urls (fp, url, last_fetch_s, visits, history) VALUES (5, 'http://b.test/', 1.0, 1, '[]')")
    old.commit()
    old.close()
    state = UrlState.open(path)
    state.bucket_of = _bucket
    assert state.fill_buckets() == 1 and state.buckets() == [_bucket("http://b.test/")]
    a, a_new = _record("http://a.test/", T0 + 10), _record("http://a.test/", T0 + 20, visits=2)
    state.put(a, 1, {})
    assert state.merge_rows([_record("http://a.test/", T0 + 5)]) == 0, "an older record does not win"
    assert state.merge_rows([a_new]) == 1 and state.get(a.fp) == a_new
    assert state.export_rows(_bucket("http://a.test/")) == [a_new]
    assert state.plan_arrays({_bucket("http://b.test/")}).fp.tolist() == [5]
    assert state.drop_rows([_bucket("http://a.test/")]) == 1 and state.get(a.fp) is None
    state.close()


def test_budget_split_by_buckets_sums_to_the_budget() -> None:
    assert apportion(10, {"a": 22, "b": 21, "c": 21}) == {"a": 4, "b": 3, "c": 3}
    assert sum(apportion(7, {"a": 1, "b": 1, "c": 1}).values()) == 7
    assert apportion(5, {"a": 0}) == {"a": 0}


async def test_grants_never_exceed_the_crawl_wide_budget_and_come_back_unused() -> None:
    hub = InProcessHub(M)
    used = {"a": 0, "b": 0}
    budgets = {n: CycleBudget(hub.coordinator(), 4, 10, 4, used=lambda n=n: used[n], on_grant=lambda: None,
                              retry_s=0.0) for n in used}
    for _ in range(3):
        for name, budget in budgets.items():
            await budget.tick(True, True, 0.0)
            used[name] = budget.granted
    assert sum(b.granted for b in budgets.values()) == 10
    assert (await hub.coordinator().counters())["recrawl.4.granted"] == 10
    assert all(b.settled(True) for b in budgets.values()) and all(b.dry for b in budgets.values())
    used["a"] -= 2  # a had two it did not use and has no more work: it gives them back
    await budgets["a"].tick(False, True, 0.0)
    assert (await hub.coordinator().counters())["recrawl.4.granted"] == 8
    await budgets["b"].tick(True, True, 1.0, force=True)
    assert budgets["b"].granted - used["b"] == 2 and not budgets["b"].dry


async def test_death_recovery_sends_the_dead_nodes_rows_with_its_buckets(tmp_path: Path) -> None:
    config = CrawlConfig(cluster=ClusterConfig(n_buckets=M))
    state_dir = tmp_path / "nodes" / "dead" / "state"
    urls = ["http://a.test/", "http://b.test/", "http://c.test/"]
    frontier = Frontier.open(state_dir, config.frontier, config.politeness, n_buckets=M)
    frontier.add([CrawlItem(u + "q", fingerprint(u + "q")) for u in urls], 0.0)
    frontier.close()
    rows = UrlState.open(state_dir / "urls.sqlite")
    rows.put_many([_record(u, T0) for u in urls], 1, "fetches")  # written without buckets: recovery fills them
    rows.close()
    hub = InProcessHub(M)
    wanted = tuple(sorted({_bucket(u) for u in urls[:2]}))
    outcome = await recover_node("dead", wanted, nodes_dir=tmp_path / "nodes", config=config, frontier_cls=Frontier,
                                 transport=hub.transport("x"), coordinator=hub.coordinator())
    # the third bucket is no longer the dead node's in the table (a join took it) but its state still
    # holds it, not handed over: its new owner awaits it, so it goes too
    other = _bucket(urls[2])
    assert other not in wanted
    assert outcome["buckets"] == len(wanted) + 1
    got = await hub.transport("y").receive([*wanted, other], 100, 0.1)
    sent = [decode(d.payload) for d in got]
    assert sorted(r.url for m in sent for r in m.rows) == sorted(urls)  # type: ignore[union-attr]
    left = UrlState.open(state_dir / "urls.sqlite")
    assert list(left.records()) == [], "sent rows are dropped from the dead state"
    left.close()
