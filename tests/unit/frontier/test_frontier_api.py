"""The Frontier API the node uses, over the memory and the persistent frontier."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from webgather.cluster.mapping import bucket_of
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.errors import ConfigError, FrontierError
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import bucket_range
from webgather.urls import fingerprint

POLITE = PolitenessConfig(min_delay_s=1.0, per_ip_connections=100)


def item(url: str, depth: int = 0, **kw: object) -> CrawlItem:
    return CrawlItem(url, fingerprint(url), depth=depth, **kw)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "persistent"])
def open_frontier(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    opened: list[Frontier] = []

    def make(politeness: PolitenessConfig = POLITE, **kw: object) -> Frontier:
        state = None if request.param == "memory" else tmp_path / f"state{len(opened)}"
        config = FrontierConfig(host_queue_memory=4, queue_memory_items=64)
        f = Frontier.open(state, config, politeness, n_buckets=64, **kw)  # type: ignore[arg-type]
        opened.append(f)
        return f

    yield make
    for f in opened:
        f.close()


def drain(f: Frontier, now: float, step: float = 1.0, limit: int = 10_000) -> list[str]:
    """Fetch everything, completing each item at once; returns URLs in fetch order."""
    urls: list[str] = []
    for _ in range(limit):
        got, wake = f.next_ready(now)
        if got is None:
            if math.isinf(wake):
                return urls
            now = wake
            continue
        urls.append(got.url)
        f.complete(got, now)
        now += step / 10
    raise AssertionError("frontier did not drain")


def test_add_returns_only_new_items_first_occurrence_wins(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier()
    a, b = item("http://a.test/"), item("http://b.test/")
    assert f.add([a, b, item("http://a.test/", depth=3)], 0.0) == [a, b]
    assert f.add([a, item("http://c.test/")], 0.0) == [item("http://c.test/")]
    assert f.pending() == 3 and f.stats()["seen"] == 3


def test_every_added_url_is_handed_out_exactly_once(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier()
    urls = [f"http://h{i % 7}.test/p{i}" for i in range(60)]
    f.add([item(u) for u in urls], 0.0)
    fetched = drain(f, 0.0)
    assert sorted(fetched) == sorted(urls)
    assert f.is_done() and f.pending() == 0 and f.in_flight() == 0


def test_a_host_waits_min_delay_after_its_request_ends(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier(PolitenessConfig(min_delay_s=2.0))
    f.add([item("http://a.test/1"), item("http://a.test/2")], 0.0)
    first, _ = f.next_ready(0.0)
    assert first is not None
    assert f.next_ready(0.0) == (None, math.inf)
    f.complete(first, 3.0, response_time_s=3.0)
    assert f.next_ready(4.0) == (None, 5.0)
    second, _ = f.next_ready(5.0)
    assert second is not None and second.url == "http://a.test/2"


def test_within_a_host_lower_depth_goes_first_then_fifo(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier(PolitenessConfig(min_delay_s=0.0))
    f.add([item("http://a.test/d2", 2), item("http://a.test/d1a", 1)], 0.0)
    f.add([item("http://a.test/d0", 0), item("http://a.test/d1b", 1)], 0.0)
    f.add([item(f"http://a.test/x{i}", 3) for i in range(10)], 0.0)
    order = drain(f, 0.0)
    assert order[:4] == ["http://a.test/d0", "http://a.test/d1a", "http://a.test/d1b", "http://a.test/d2"]
    assert order[4:] == [f"http://a.test/x{i}" for i in range(10)]


def test_retry_puts_the_item_back_at_the_head_with_attempt_plus_one(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier(PolitenessConfig(min_delay_s=0.0, backoff_base_s=1.0))
    f.add([item("http://a.test/1"), item("http://a.test/2")], 0.0)
    got, _ = f.next_ready(0.0)
    assert got is not None
    f.retry(got, 1.0, not_before=10.0)
    assert f.pending() == 2 and f.in_flight() == 0
    other, _ = f.next_ready(2.0)  # the host backs off one step (1 s), not until the item's retry
    assert other is not None and other.url == "http://a.test/2"
    f.complete(other, 2.0)
    assert f.next_ready(9.0) == (None, 10.0)
    again, _ = f.next_ready(10.0)
    assert again is not None and again.url == got.url and again.attempt == 1
    f.complete(again, 10.0)
    assert f.is_done()


def test_max_pages_per_host_counts_instead_of_queueing(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier(max_pages_per_host=2)
    fresh = f.add([item(f"http://a.test/{i}") for i in range(5)] + [item("http://b.test/")], 0.0)
    assert [i.url for i in fresh] == ["http://a.test/0", "http://a.test/1", "http://b.test/"]
    assert f.add([item("http://a.test/9")], 0.0) == []
    assert f.stats()["dropped_by_host_cap"] == 4


def test_requisites_are_not_pages_to_the_per_host_cap(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier(max_pages_per_host=1)
    fresh = f.add([item("http://a.test/0"), item("http://a.test/s.css", kind="requisite"), item("http://a.test/1"),
                   item("http://a.test/i.png", kind="requisite2")], 0.0)
    assert [i.url for i in fresh] == ["http://a.test/0", "http://a.test/s.css", "http://a.test/i.png"]
    assert f.stats()["dropped_by_host_cap"] == 1


def test_drop_host_returns_its_queued_items(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier()
    f.add([item("http://a.test/1"), item("http://a.test/2"), item("http://b.test/")], 0.0)
    dropped = f.drop_host("a.test")
    assert [i.url for i in dropped] == ["http://a.test/1", "http://a.test/2"]
    assert f.pending() == 1
    assert [i.url for i in f.add([item("http://a.test/1")], 0.0)] == []  # still seen


def test_defer_host_and_queued_hosts(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier()
    f.add([item("https://a.test/x"), item("http://b.test:8080/")], 0.0)
    assert sorted(f.queued_hosts()) == [("a.test", "https://a.test/x"), ("b.test:8080", "http://b.test:8080/")]
    f.defer_host("a.test", math.inf)
    f.defer_host("b.test:8080", 7.0)
    assert f.next_ready(1.0) == (None, 7.0)
    f.defer_host("a.test", 2.0)
    got, _ = f.next_ready(2.0)
    assert got is not None and got.url == "https://a.test/x"


def test_misuse_raises_frontier_errors(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier()
    with pytest.raises(FrontierError):
        f.complete(item("http://a.test/"), 0.0)
    with pytest.raises(FrontierError):
        f.add([CrawlItem("not a url", 1)], 0.0)
    with pytest.raises(FrontierError):
        f.add([item("http://a.test/"), CrawlItem("http://a.test/x", -5)], 0.0)
    assert f.pending() == 0
    with pytest.raises(FrontierError):
        f.export_bucket(64)
    with pytest.raises(ConfigError):
        Frontier.open(None, FrontierConfig(), POLITE, n_buckets=5000)


def test_skipped_completion_frees_the_host_at_once(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier(PolitenessConfig(min_delay_s=30.0))
    f.add([item("http://a.test/1"), item("http://a.test/2")], 0.0)
    got, _ = f.next_ready(0.0)
    assert got is not None
    f.complete(got, 1.0, skipped=True)
    assert f.next_ready(1.0)[0] is not None


def test_a_skipped_retry_puts_the_item_back_and_leaves_the_hosts_clock(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier(PolitenessConfig(min_delay_s=30.0))
    f.add([item("http://a.test/1")], 0.0)
    got, _ = f.next_ready(0.0)
    assert got is not None
    f.retry(got, 1.0, not_before=1.0, error=False, skipped=True)  # no request was made: no 30 s gap
    again, _ = f.next_ready(1.0)
    assert again is not None and again.url == got.url
    f.retry(again, 2.0, not_before=2.0, error=False)  # a request was made (robots.txt): the gap counts
    assert f.next_ready(2.0) == (None, 32.0)


def test_bucket_hand_off_moves_items_seen_keys_and_clocks(open_frontier) -> None:  # type: ignore[no-untyped-def]
    old, new = open_frontier(), open_frontier()
    urls = [f"http://h{i}.test/p{j}" for i in range(12) for j in range(3)]
    old.add([item(u) for u in urls], 0.0)
    bucket = bucket_of("h3.test", 64)
    old.set_crawl_delay("h3.test", 4.0)
    got, _ = old.next_ready(0.0)
    assert got is not None
    old.complete(got, 1.0)
    state = old.export_bucket(bucket)
    in_bucket = sorted(u for u in urls if bucket_of(u.split("/")[2], 64) == bucket)
    done_here = [got.url] if got.url in in_bucket else []
    assert sorted(i.url for i in state.items) == sorted(set(in_bucket) - set(done_here))
    lo, hi = bucket_range(bucket)
    assert len(state.seen_keys) == len(in_bucket) and bool(np.all((state.seen_keys >= lo) & (state.seen_keys < hi)))
    assert new.import_bucket(state) == len(state.items)
    assert new.add([item(u) for u in in_bucket], 1.0) == []  # all seen at the new owner
    assert old.drop_bucket(bucket) == len(state.items)
    assert old.export_bucket(bucket).items == ()
    assert sorted(drain(new, 2.0)) == sorted(i.url for i in state.items)
    clock = {c.host: c for c in state.hosts}["h3.test"]
    assert clock.crawl_delay_s == 4.0


def test_import_queues_each_url_once(open_frontier) -> None:  # type: ignore[no-untyped-def]
    old, new = open_frontier(), open_frontier()
    old.add([item("http://a.test/1"), item("http://a.test/2")], 0.0)
    state = old.export_bucket(bucket_of("a.test", 64))
    doubled = type(state)(state.bucket, 64, state.items + state.items, state.seen_keys, state.hosts)
    assert new.import_bucket(doubled) == 2
    assert sorted(drain(new, 0.0)) == ["http://a.test/1", "http://a.test/2"]


@pytest.mark.parametrize("links_first", [True, False])
def test_a_merge_does_not_depend_on_the_order(open_frontier, links_first: bool) -> None:  # type: ignore[no-untyped-def]
    """A bucket state merged after URL batches of its bucket (a late hand-off) unqueues what it had
    fetched: the same queue as when it comes first (nemesis file seed 103)."""
    old, new = open_frontier(), open_frontier()
    old.add([item("http://a.test/"), item("http://a.test/1")], 0.0)
    done, _ = old.next_ready(0.0)
    assert done is not None and done.url == "http://a.test/"
    old.complete(done, 0.5)
    state = old.export_bucket(bucket_of("a.test", 64))
    links = [item("http://a.test/", depth=3), item("http://a.test/2", depth=3)]
    if links_first:
        assert len(new.add(links, 1.0)) == 2
        assert new.import_bucket(state) == 1
    else:
        assert new.import_bucket(state) == 1
        assert [i.url for i in new.add(links, 1.0)] == ["http://a.test/2"]
    assert new.pending() == 2
    assert sorted(drain(new, 2.0)) == ["http://a.test/1", "http://a.test/2"]
    assert new.stats()["dropped_done"] == (1 if links_first else 0)


def test_import_rejects_hosts_of_another_bucket(open_frontier) -> None:  # type: ignore[no-untyped-def]
    old, new = open_frontier(), open_frontier()
    old.add([item("http://a.test/")], 0.0)
    state = old.export_bucket(bucket_of("a.test", 64))
    wrong = type(state)((state.bucket + 1) % 64, 64, state.items, state.seen_keys[:0], ())
    with pytest.raises(FrontierError):
        new.import_bucket(wrong)
    assert new.pending() == 0


def test_stats_name_the_counters_the_progress_display_reads(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier()
    f.add([item("http://a.test/"), item("http://b.test/")], 0.0)
    f.next_ready(0.0)
    s = f.stats()
    assert (s["queued"], s["in_flight"], s["seen"], s["hosts_total"]) == (1, 1, 2, 2)
    assert s["hosts_ready"] == 1 and s["hosts_waiting"] == 0
    for key in ("hosts_backed_off", "cache_hits", "dropped_by_host_cap", "resumed_in_flight"):
        assert key in s


@pytest.mark.parametrize("url", ["http://a.test/", "https://a.test:8443/x?y=1", "http://u:p@a.test/p",
                                 "http://[::1]:81/", "http://a.test?q", "http://a.test", "http://xn--bcher-kva.test/a/b"])
def test_hosts_are_grouped_by_host_key(url: str) -> None:
    from webgather.urls import host_key

    f = Frontier.open(None, FrontierConfig(), POLITE)
    assert f.add([CrawlItem(url, fingerprint(url))], 0.0)
    assert f.queued_hosts() == [(host_key(url), url)]


def test_a_subclass_may_key_buckets_otherwise(tmp_path: Path) -> None:
    class ByFirstLetter(Frontier):
        def bucket_for(self, host: str) -> int:
            return ord(host[0]) % self.n_buckets

    old = ByFirstLetter.open(tmp_path / "old", FrontierConfig(), POLITE, n_buckets=64)
    new = ByFirstLetter.open(None, FrontierConfig(), POLITE, n_buckets=64)
    old.add([item("http://a1.test/"), item("http://a2.test/"), item("http://b.test/")], 0.0)
    state = old.export_bucket(ord("a") % 64)
    assert sorted(i.url for i in state.items) == ["http://a1.test/", "http://a2.test/"]
    assert new.import_bucket(state) == 2
    assert old.drop_bucket(ord("a") % 64) == 2 and old.pending() == 1
    assert new.add([item("http://a2.test/")], 0.0) == []
    old.close()


def test_release_host_lets_the_host_go_while_the_item_stays_in_flight(open_frontier) -> None:  # type: ignore[no-untyped-def]
    f = open_frontier()
    f.add([item("http://a.test/1"), item("http://a.test/2")], 0.0)
    first, _ = f.next_ready(0.0)
    assert first is not None and f.next_ready(0.5)[0] is None  # one request per host
    f.release_host(first, 1.0)
    assert f.next_ready(1.5)[0] is None  # min_delay_s counted from the release
    second, _ = f.next_ready(2.0)
    assert second is not None and second.url == "http://a.test/2"
    assert f.in_flight() == 2 and not f.is_done()  # the first is not done until completed
    with pytest.raises(FrontierError):
        f.release_host(first, 2.0)
    with pytest.raises(FrontierError):
        f.retry(first, 2.0, not_before=3.0)
    f.complete(first, 2.1)  # commits only: the host's clock is not set a second time
    f.complete(second, 2.2)
    assert f.is_done()
    f.add([item("http://a.test/3")], 2.2)
    assert f.next_ready(3.1)[0] is None and f.next_ready(3.2)[0] is not None
