"""The fault bench's figures from a server's request records (tests/cluster/fault_figures.py). Pure."""

from __future__ import annotations

import pytest
from fault_figures import fetched_twice, gave_up, hosts_back_s, politeness, recovery_s

from webgather.testweb.records import RequestRecord


def rec(start_s: float, end_s: float, host: str = "h1:80", path: str = "/p", conn: int = 1,
        status: int | None = 200) -> RequestRecord:
    return RequestRecord(start_s, end_s, host, path, "127.0.0.1", "127.0.0.1", conn, status, 100)


def test_politeness_counts_overlaps_short_gaps_and_resends_apart() -> None:
    records = [
        rec(0.0, 0.1, path="/a"), rec(0.05, 0.2, path="/b"),  # at once
        rec(0.25, 0.3, path="/c"),  # 50 ms after /b: short
        rec(1.0, 1.01, path="/d", status=None), rec(1.02, 1.1, path="/d", conn=2),  # re-sent on a new connection
        rec(2.0, 2.1, path="/e"), rec(2.5, 2.6, path="/f"),  # 400 ms: polite
        rec(0.0, 0.1, host="h2:80"), rec(0.12, 0.2, host="h2:80", path="/q"),  # after a request we gave up on
    ]
    found = politeness(records, 0.3, excused={("h2:80", "/p")})
    assert (found.at_once, found.short_gaps, found.resends, found.violations) == (1, 1, 1, 3)


def test_a_second_request_on_the_same_connection_is_not_a_resend() -> None:
    found = politeness([rec(0.0, 0.1, status=None), rec(0.11, 0.2)], 0.3, excused=set())
    assert (found.short_gaps, found.resends) == (1, 0)


def test_gave_up_is_the_timed_out_requests_host_and_path() -> None:
    entries = [{"url": "http://h1:80/x?y", "host": "h1:80", "error": "timeout"},
               {"url": "http://h1:80/z", "host": "h1:80", "error": None}]
    assert gave_up(entries) == {("h1:80", "/x?y")}


def steady(rate: float, start_s: float, end_s: float) -> list[RequestRecord]:
    n = int((end_s - start_s) * rate)
    return [rec(start_s + k / rate, start_s + k / rate + 0.01, path=f"/{k}") for k in range(n)]


def test_recovery_is_the_first_window_back_at_half_the_pre_fault_rate() -> None:
    records = steady(10.0, 0.0, 10.0) + steady(2.0, 10.0, 13.0) + steady(6.0, 13.0, 20.0)
    # [12.7, 13.7) holds 5 pages (13.01 + k/6): half of 10 per second
    assert recovery_s(records, 10.0) == pytest.approx(2.7, abs=0.01)
    assert recovery_s(steady(10.0, 0.0, 20.0), 10.0) == 0.0  # no dip


def test_recovery_counts_from_the_dip_when_the_crawl_went_on_for_a_moment_after_the_fault() -> None:
    records = steady(10.0, 0.0, 10.5) + steady(10.0, 13.0, 20.0)  # nodes noticed a lost Redis 0.5 s late
    assert recovery_s(records, 10.0) == pytest.approx(2.5, abs=0.01)  # [12.5, 13.5) holds 13.01..13.41


def test_a_dip_long_after_the_fault_is_the_crawls_tail_not_the_fault() -> None:
    assert recovery_s(steady(10.0, 0.0, 20.0) + steady(1.0, 20.0, 30.0), 10.0) == 0.0


def test_recovery_never_back_is_the_time_to_the_end() -> None:
    records = steady(10.0, 0.0, 10.0) + steady(2.0, 10.0, 15.0)
    assert recovery_s(records, 10.0) == pytest.approx(5.0, abs=0.6)


def test_robots_requests_do_not_count_as_pages() -> None:
    robots = [rec(10.0 + k / 20, 10.0 + k / 20 + 0.01, path="/robots.txt") for k in range(100)]
    assert recovery_s(steady(10.0, 0.0, 10.0) + robots + steady(10.0, 16.0, 20.0), 10.0) == pytest.approx(5.5, abs=0.15)


def test_fetched_twice() -> None:
    assert fetched_twice([{"url": "u"}, {"url": "v"}, {"url": "u"}]) == {"u"}


def test_hosts_back_is_the_first_request_after_the_fault_to_a_host_of_the_victim() -> None:
    others = [{"host": "h4", "fetched_at": 10.5}, {"host": "h3", "fetched_at": 11.5}, {"host": "h2", "fetched_at": 12.0},
              {"host": "h1", "fetched_at": 13.0}, {"host": "h1", "fetched_at": 8.0}]
    assert hosts_back_s({"h1", "h2"}, others, 10.0) == 2.0
    assert hosts_back_s({"h1", "h2"}, others[:2], 10.0) is None
