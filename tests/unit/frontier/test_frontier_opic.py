"""OPIC in the frontier: cash keys the queues, links to queued URLs add cash, it persists and travels."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from webgather.cluster.mapping import bucket_of
from webgather.cluster.wire import decode, encode_handoff
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.cash import CashBook, CashTable
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.urls import fingerprint

FAST = PolitenessConfig(min_delay_s=0.0, per_ip_connections=1000)
OPIC = FrontierConfig(order="opic", host_queue_memory=3, queue_memory_items=12, seen_memory_entries=7)


def cash_item(url: str, cash: float, depth: int = 1) -> CrawlItem:
    return CrawlItem(url, fingerprint(url), depth=depth, priority=-cash)


def take_all(f: Frontier, now: float = 0.0) -> list[tuple[str, float]]:
    """Fetch everything (completing each at once): (url, cash it held) in fetch order."""
    out = []
    while True:
        got, _ = f.next_ready(now)
        if got is None:
            return out
        out.append((got.url, -got.priority))
        f.complete(got, now)


@pytest.fixture(params=["memory", "persistent"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    made: list[Frontier] = []

    def make(config: FrontierConfig = OPIC) -> Frontier:
        state = None if request.param == "memory" else tmp_path / f"state{len(made)}"
        f = Frontier.open(state, config, FAST, n_buckets=64)
        made.append(f)
        return f

    yield make
    for f in made:
        f.close()


def test_richest_url_first_inside_a_host_and_across_hosts(opened) -> None:  # type: ignore[no-untyped-def]
    f = opened()
    f.add([cash_item("http://a.test/1", 0.1), cash_item("http://a.test/2", 0.5), cash_item("http://a.test/3", 0.3),
           cash_item("http://b.test/1", 0.4), cash_item("http://b.test/2", 0.05)], 0.0)
    order = [url for url, _ in take_all(f)]
    assert order == ["http://a.test/2", "http://b.test/1", "http://a.test/3", "http://a.test/1", "http://b.test/2"]


def test_a_link_to_a_queued_url_adds_its_cash_and_moves_it_ahead(opened) -> None:  # type: ignore[no-untyped-def]
    f = opened()
    urls = [f"http://a.test/{i}" for i in range(8)]  # more than host_queue_memory: 0..4 wait on disk
    assert len(f.add([cash_item(u, 0.1 + 0.01 * i) for i, u in enumerate(urls)], 0.0)) == 8
    assert f.add([cash_item("http://a.test/5", 0.25), cash_item("http://a.test/5", 0.25)], 1.0) == []
    f.add([cash_item("http://b.test/x", 0.4)], 1.0)
    order = take_all(f, 2.0)
    assert order[0] == ("http://a.test/5", pytest.approx(0.65))  # 0.15 + 2 x 0.25, ahead of b's 0.4
    assert order[1] == ("http://b.test/x", pytest.approx(0.4))
    assert [u for u, _ in order[2:]] == [urls[i] for i in (7, 6, 4, 3, 2, 1, 0)]  # the rest richest first
    assert f.stats()["cash_history"] == pytest.approx(0.65 + 0.4 + sum(0.1 + 0.01 * i for i in (0, 1, 2, 3, 4, 6, 7)))
    assert f.stats()["cash_entries"] == 0


def test_a_url_waiting_on_disk_takes_its_cash_when_read_back(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path / "s", OPIC, FAST, n_buckets=64)
    urls = [f"http://a.test/{i}" for i in range(8)]
    f.add([cash_item(u, 0.1 + 0.01 * i) for i, u in enumerate(urls)], 0.0)  # RAM holds 7, 6, 5
    f.add([cash_item("http://a.test/0", 1.0)], 0.0)
    order = take_all(f)
    # rows are read back 3 at a time in the order they were pushed with (4 3 2, then 1 0):
    # a/0 keeps its place on disk and is re-keyed within its chunk
    assert [u for u, _ in order] == [urls[i] for i in (7, 6, 5, 4, 3, 2, 0, 1)]
    assert order[6][1] == pytest.approx(1.1)
    f.close()


def test_cash_reaching_a_fetched_url_is_dropped_and_an_in_flight_one_keeps_it_on_retry(opened) -> None:  # type: ignore[no-untyped-def]
    f = opened()
    f.add([cash_item("http://a.test/1", 0.2), cash_item("http://a.test/2", 0.3)], 0.0)
    first, _ = f.next_ready(0.0)
    assert first is not None and first.url == "http://a.test/2"
    f.add([cash_item("http://a.test/2", 0.5)], 0.1)  # while in flight
    f.retry(first, 0.2, not_before=0.2, error=False)
    again, _ = f.next_ready(0.3)
    assert again is not None and again.url == "http://a.test/2" and -again.priority == pytest.approx(0.8)
    f.complete(again, 0.3)
    f.add([cash_item("http://a.test/2", 9.0)], 0.4)  # fetched: nothing to credit
    assert take_all(f, 0.5) == [("http://a.test/1", pytest.approx(0.2))]


def test_bfs_ignores_cash(opened) -> None:  # type: ignore[no-untyped-def]
    f = opened(FrontierConfig(order="bfs"))
    f.add([cash_item("http://a.test/1", 0.1, depth=2), cash_item("http://a.test/2", 0.9, depth=3)], 0.0)
    f.add([cash_item("http://a.test/2", 5.0, depth=1)], 0.0)
    assert [u for u, _ in take_all(f)] == ["http://a.test/1", "http://a.test/2"]
    assert "cash_history" not in f.stats()


def test_cash_survives_close_and_open(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path / "s", OPIC, FAST, n_buckets=64)
    f.add([cash_item(f"http://a.test/{i}", 0.1) for i in range(6)], 0.0)  # RAM: 0 1 2, disk: 3 4 5
    f.add([cash_item("http://a.test/1", 1.0)], 0.0)
    got, _ = f.next_ready(0.0)
    assert got is not None and got.url == "http://a.test/1"
    f.complete(got, 0.1)
    f.add([cash_item("http://a.test/2", 2.0), cash_item("http://a.test/4", 0.5)], 0.2)
    f.close()
    g = Frontier.open(tmp_path / "s", OPIC, FAST, n_buckets=64)
    assert g.stats()["cash_history"] == pytest.approx(1.1)
    order = dict(take_all(g))
    assert list(order)[0] == "http://a.test/2"
    assert order == {"http://a.test/2": pytest.approx(2.1), "http://a.test/0": pytest.approx(0.1),
                     "http://a.test/3": pytest.approx(0.1), "http://a.test/4": pytest.approx(0.6),
                     "http://a.test/5": pytest.approx(0.1)}
    g.close()


def test_cash_survives_a_crash_through_the_journal(tmp_path: Path) -> None:
    f = Frontier.open(tmp_path / "s", OPIC, FAST, n_buckets=64)
    f.add([cash_item(f"http://a.test/{i}", 0.1) for i in range(6)], 0.0)
    f.flush()  # rows in SQLite; the credits below only in the journal
    f.add([cash_item("http://a.test/2", 3.0)], 0.1)
    got, _ = f.next_ready(0.1)
    assert got is not None and got.url == "http://a.test/2"
    f.add([cash_item("http://a.test/1", 1.0)], 0.2)
    f.complete(got, 0.2)  # the group commit: the journal record holds both credits
    assert f.persist is not None
    f.persist.db.conn.close()  # kill -9: the open transaction is lost, the journal stays
    f.persist.journal.close()
    f.persist = None
    g = Frontier.open(tmp_path / "s", OPIC, FAST, n_buckets=64)
    assert take_all(g)[0] == ("http://a.test/1", pytest.approx(1.1))
    g.close()


def test_a_replayed_credit_sets_the_cash_of_a_queued_url_only() -> None:
    book = CashBook(history=2.5)
    book.queued([cash_item("http://a.test/q", 0.25)])
    queued, gone = fingerprint("http://a.test/q"), fingerprint("http://a.test/gone")
    book.replayed(queued, 1.5)
    book.replayed(gone, 9.0)  # fetched since the credit was journaled: not brought back
    assert (book.table.get(queued), book.table.get(gone)) == (1.5, None)
    assert book.stats() == {"cash_history": 2.5, "cash_entries": 1}


def test_handoff_carries_the_cash_queued_urls_hold_now(tmp_path: Path) -> None:
    old = Frontier.open(tmp_path / "old", OPIC, FAST, n_buckets=64)
    urls = [f"http://a.test/{i}" for i in range(8)]
    old.add([cash_item(u, 0.1) for u in urls], 0.0)
    old.add([cash_item("http://a.test/6", 0.7), cash_item("http://a.test/7", 0.2)], 0.0)  # one in RAM, one on disk
    state = old.export_bucket(bucket_of("a.test", 64))
    message = decode(encode_handoff("n1", 1, state))
    new = Frontier.open(None, OPIC, FAST, n_buckets=64)
    assert new.import_bucket(message.state) == 8  # type: ignore[attr-defined]
    order = take_all(new)
    assert order[:2] == [("http://a.test/6", pytest.approx(0.8)), ("http://a.test/7", pytest.approx(0.3))]
    assert sum(c for _, c in order) == pytest.approx(0.8 + 0.3 + 0.6)
    old.close()
    new.close()


def test_cash_table_matches_a_dict_through_merges_and_tombstones() -> None:
    rng = random.Random(5)
    table, model = CashTable(), dict[int, float]()
    for step in range(30_000):
        fp = rng.getrandbits(64) if rng.random() < 0.6 or not model else rng.choice(list(model)[-50:])
        roll = rng.random()
        if roll < 0.6:
            table.put(fp, float(step))
            model[fp] = float(step)
        elif roll < 0.8:
            assert table.pop(fp) == model.pop(fp, None)
        else:
            assert table.get(fp) == model.get(fp)
    assert len(table) == len(model)
    assert all(table.get(fp) == v for fp, v in model.items())
    assert table.nbytes() <= 16 * (len(model) + table.nbytes() // 16 - len(model)) + 1
    assert np.uint64(max(model)) > 0


@pytest.mark.parametrize("backend", ["memory", "persistent"])
def test_random_credits_pops_and_retries_match_a_reference_model(backend: str, tmp_path: Path) -> None:
    """One host (RAM holds every item): the frontier serves max cash, FIFO among equals, like the model."""
    rng = random.Random(11)
    config = FrontierConfig(order="opic", host_queue_memory=10_000, queue_memory_items=100_000)
    many = PolitenessConfig(min_delay_s=0.0, per_ip_connections=1000, per_host_connections=1000)
    f = Frontier.open(None if backend == "memory" else tmp_path / "s", config, many, n_buckets=64)
    queued: dict[str, tuple[float, int]] = {}  # url -> (cash, seq)
    flying: dict[str, tuple[CrawlItem, int, float]] = {}  # url -> (item, seq, cash)
    done: set[str] = set()
    seq = 0
    for step in range(3000):
        roll = rng.random()
        if roll < 0.5:
            url, cash = f"http://a.test/{rng.randrange(400)}", float(rng.randrange(0, 4))
            f.add([cash_item(url, cash)], step)
            if url in queued:
                queued[url] = (queued[url][0] + cash, queued[url][1])
            elif url in flying:  # the cash waits in case the fetch is retried
                flying[url] = (flying[url][0], flying[url][1], flying[url][2] + cash)
            elif url not in done:
                seq += 1
                queued[url] = (cash, seq)
        elif roll < 0.8:
            got, _ = f.next_ready(step)
            if not queued:
                assert got is None
                continue
            want = min(queued, key=lambda u: (-queued[u][0], queued[u][1]))
            assert got is not None and got.url == want and -got.priority == queued[want][0]
            cash, its_seq = queued.pop(want)
            flying[want] = (got, its_seq, cash)
        elif flying:
            url = rng.choice(sorted(flying))
            got, its_seq, cash = flying.pop(url)
            if rng.random() < 0.3:
                f.retry(got, step, not_before=step, error=False)
                queued[url] = (cash, its_seq)
            else:
                f.complete(got, step)
                done.add(url)
    f.close()


def test_cash_table_add_many_adds_to_present_entries_only_repeats_included() -> None:
    table = CashTable()
    table.load(np.array([5, 9, 2**64 - 1], dtype=np.uint64), np.array([1.0, 2.0, 3.0]))
    table.put(7, 10.0)  # in the dict of recent entries
    table.pop(9)  # a tombstone
    fps = np.array([5, 9, 7, 4, 5, 2**64 - 1, 7], dtype=np.uint64)
    new = table.add_many(fps, np.array([0.5, 1.0, 1.0, 1.0, 0.25, 1.0, 2.0]))
    assert np.isnan(new[[1, 3]]).all()
    assert new[[0, 4]].tolist() == [1.75, 1.75] and new[5] == 4.0 and new[[2, 6]].tolist() == [11.0, 13.0]
    assert (table.get(5), table.get(7), table.get(9), table.get(4)) == (1.75, 13.0, None, None)
