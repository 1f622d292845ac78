"""Politeness policy with explicit ``now`` values: delays, caps, backoff, Retry-After, groups, order."""

from __future__ import annotations

import math

import pytest

from webgather.config import PolitenessConfig
from webgather.frontier.policy import Politeness


def make(**kw: float) -> Politeness:
    base = dict(min_delay_s=1.0, per_host_connections=1, per_ip_connections=4,
                backoff_base_s=2.0, backoff_max_s=60.0, retry_after_max_s=100.0,
                max_crawl_delay_s=10.0, adaptive_delay_factor=0.0, max_delay_s=30.0)
    base.update(kw)
    return Politeness(PolitenessConfig(**base))  # type: ignore[arg-type]


def fetch_once(p: Politeness, host: str, now: float) -> None:
    got, _ = p.next_ready(now)
    assert got == host


def test_nothing_queued_means_no_host_and_infinite_wake() -> None:
    p = make()
    assert p.next_ready(0.0) == (None, math.inf)


def test_min_delay_counts_from_the_end_of_the_request() -> None:
    p = make(min_delay_s=2.0)
    p.set_head("a", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    assert p.next_ready(5.0) == (None, math.inf)  # in flight: only a completion frees it
    p.complete("a", 7.0)
    assert p.next_ready(8.9) == (None, 9.0)
    assert p.next_ready(9.0) == ("a", 9.0)


def test_crawl_delay_is_honoured_up_to_its_cap() -> None:
    p = make(min_delay_s=1.0, max_crawl_delay_s=10.0)
    p.set_head("a", 0.0, 0.0)
    p.set_head("b", 0.0, 0.0)
    p.set_crawl_delay("a", 5.0)
    p.set_crawl_delay("b", 500.0)
    fetch_once(p, "a", 0.0)
    fetch_once(p, "b", 0.0)
    p.complete("a", 1.0)
    p.complete("b", 1.0)
    assert p.state("a").next_allowed_at == 6.0
    assert p.state("b").next_allowed_at == 11.0


def test_adaptive_delay_is_factor_times_response_time_clamped() -> None:
    p = make(min_delay_s=1.0, adaptive_delay_factor=4.0, max_delay_s=30.0)
    p.set_head("a", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    p.complete("a", 2.0, response_time_s=2.0)
    assert p.state("a").next_allowed_at == 10.0
    fetch_once(p, "a", 10.0)
    p.complete("a", 30.0, response_time_s=20.0)
    assert p.state("a").next_allowed_at == 60.0  # 80 s clamped to 30


def test_backoff_doubles_per_consecutive_error_up_to_the_cap_and_resets() -> None:
    p = make(min_delay_s=0.5, backoff_base_s=2.0, backoff_max_s=10.0)
    p.set_head("a", 0.0, 0.0)
    now = 0.0
    waits = []
    for _ in range(5):
        fetch_once(p, "a", now)
        p.complete("a", now, error=True)
        waits.append(p.state("a").next_allowed_at - now)
        now = p.state("a").next_allowed_at
    assert waits == [2.0, 4.0, 8.0, 10.0, 10.0]
    assert p.counts(now)["hosts_backed_off"] == 1
    fetch_once(p, "a", now)
    p.complete("a", now)
    assert p.state("a").errors == 0
    assert p.state("a").next_allowed_at == now + 0.5


def test_retry_after_is_honoured_and_capped() -> None:
    p = make(min_delay_s=1.0, retry_after_max_s=100.0)
    p.set_head("a", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    p.complete("a", 1.0, retry_after_s=30.0)
    assert p.state("a").next_allowed_at == 31.0
    fetch_once(p, "a", 31.0)
    p.complete("a", 31.0, retry_after_s=10_000.0)
    assert p.state("a").next_allowed_at == 131.0


def test_per_ip_cap_holds_hosts_on_one_address() -> None:
    p = make(per_ip_connections=2, min_delay_s=0.0)
    for h in ("a", "b", "c", "d"):
        p.set_host_ip(h, "127.0.0.1", 0.0)
        p.set_head(h, 0.0, 0.0)
    started = {p.next_ready(0.0)[0], p.next_ready(0.0)[0]}
    assert len(started) == 2 and None not in started
    assert p.next_ready(0.0) == (None, math.inf)
    first = sorted(started)[0]
    p.complete(first, 1.0)
    third, _ = p.next_ready(1.0)
    assert third is not None and third not in started


def test_host_with_unknown_ip_is_its_own_group() -> None:
    p = make(per_ip_connections=1, min_delay_s=0.0)
    p.set_head("a", 0.0, 0.0)
    p.set_head("b", 0.0, 0.0)
    assert {p.next_ready(0.0)[0], p.next_ready(0.0)[0]} == {"a", "b"}


def test_moving_an_active_host_to_another_ip_moves_its_slot() -> None:
    p = make(per_ip_connections=1, min_delay_s=0.0)
    p.set_head("a", 0.0, 0.0)
    p.set_head("b", 0.0, 0.0)
    p.set_host_ip("b", "ip1", 0.0)
    fetch_once(p, "a", 0.0)
    p.set_host_ip("a", "ip1", 0.0)  # a's request now counts against ip1: b must wait
    assert p.next_ready(0.0) == (None, math.inf)
    p.complete("a", 0.0)
    assert p.next_ready(0.0)[0] == "b"


def test_per_host_connections_allows_that_many_requests_in_flight() -> None:
    p = make(per_host_connections=2, min_delay_s=0.0)
    p.set_head("a", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    p.set_head("a", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    p.set_head("a", 0.0, 0.0)
    assert p.next_ready(0.0) == (None, math.inf)
    p.complete("a", 0.0)
    assert p.next_ready(0.0)[0] == "a"


def test_ready_hosts_go_shallowest_head_first_fifo_among_equals() -> None:
    p = make(min_delay_s=0.0)
    p.set_head("deep", 3.0, 0.0)
    p.set_head("first", 1.0, 0.0)
    p.set_head("second", 1.0, 0.0)
    p.set_head("root", 0.0, 0.0)
    order = [p.next_ready(0.0)[0] for _ in range(4)]
    assert order == ["root", "first", "second", "deep"]


def test_waiting_hosts_report_the_earliest_wake_time() -> None:
    p = make()
    p.set_head("a", 0.0, 0.0)
    p.defer("a", 50.0, 0.0)
    p.set_head("b", 0.0, 0.0)
    p.defer("b", 20.0, 0.0)
    assert p.next_ready(10.0) == (None, 20.0)
    assert p.next_ready(20.0) == ("b", 20.0)
    assert p.next_ready(20.0) == (None, 50.0)


def test_defer_to_infinity_holds_a_host_until_released() -> None:
    p = make()
    p.set_head("a", 0.0, 0.0)
    p.defer("a", math.inf, 0.0)
    assert p.next_ready(1e9) == (None, math.inf)
    p.defer("a", 5.0, 1.0)
    assert p.next_ready(5.0) == ("a", 5.0)


def test_skipped_request_frees_the_slot_without_a_delay() -> None:
    p = make(min_delay_s=10.0)
    p.set_head("a", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    p.complete("a", 1.0, skipped=True)
    assert p.next_ready(1.0) == ("a", 1.0)


def test_not_before_holds_the_host() -> None:
    p = make(min_delay_s=1.0)
    p.set_head("a", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    p.complete("a", 0.0, error=True, not_before=100.0)
    assert p.next_ready(99.0) == (None, 100.0)


def test_complete_without_a_request_in_flight_is_an_error() -> None:
    p = make()
    with pytest.raises(ValueError):
        p.complete("a", 0.0)
    with pytest.raises(ValueError):
        p.set_crawl_delay("a", -1.0)


def test_counts_split_hosts_into_ready_and_waiting() -> None:
    p = make(min_delay_s=5.0)
    p.set_head("a", 0.0, 0.0)
    p.set_head("b", 0.0, 0.0)
    fetch_once(p, "a", 0.0)
    assert p.counts(0.5)["hosts_active"] == 1  # a request under way, its queue empty now
    p.complete("a", 1.0)
    counts = p.counts(2.0)
    assert counts == {"hosts_total": 2, "hosts_ready": 1, "hosts_waiting": 1, "hosts_backed_off": 0, "hosts_active": 0}


def test_stale_waiting_entries_do_not_pile_up() -> None:
    p = make(min_delay_s=0.0)
    for round_ in range(50):
        for h in range(40):
            p.set_head(f"h{h}", 0.0, 0.0)
            p.defer(f"h{h}", math.inf, 0.0)
            p.defer(f"h{h}", 1e9 + round_, 0.0)
    assert len(p._waiting) <= 4 * 40 + 1024 + 1
    assert p.next_ready(1e9 + 49)[0] is not None


def test_take_turn_books_successive_turns_one_delay_apart_and_holds_the_hosts_own_urls() -> None:
    p = make(min_delay_s=1.0)
    assert [p.take_turn("hub", 10.0) for _ in range(3)] == [10.0, 11.0, 12.0]
    p.set_head("hub", 0.0, 10.5)
    assert p.next_ready(10.5) == (None, 13.0)  # its own URL comes after the booked turns
    p.set_crawl_delay("slow", 5.0)
    assert p.take_turn("slow", 0.0) == 0.0 and p.take_turn("slow", 1.0) == 5.0
    p.defer("held", math.inf, 0.0)
    assert p.take_turn("held", 2.0) == 2.0  # deferred without end (its robots.txt is owed): free now


def test_a_host_learning_its_address_can_find_the_address_over_its_cap() -> None:
    p = make(per_ip_connections=2)
    for host in ("a", "b", "c"):
        p.set_head(host, 0.0, 0.0)
        fetch_once(p, host, 0.0)  # each its own group while its address is unknown
    p.set_host_ip("a", "10.0.0.1", 0.0)
    p.set_host_ip("b", "10.0.0.1", 0.0)
    assert not p.over_ip_cap("a")
    p.set_host_ip("c", "10.0.0.1", 0.0)
    assert p.over_ip_cap("c") and not p.over_ip_cap("unknown")


def test_a_booked_turn_that_ended_late_moves_the_hosts_next_turn_one_delay_past_its_end() -> None:
    p = make(min_delay_s=1.0)
    assert p.take_turn("hub", 10.0) == 10.0
    p.turn_ended("hub", 10.4)  # the answer took 0.4 s: the next turn is 1 s after it, not after the start
    assert p.take_turn("hub", 10.4) == 11.4
    p.defer("held", math.inf, 0.0)
    p.turn_ended("held", 2.0)
    assert p.take_turn("held", 2.0) == 2.0  # still deferred without end: free now, as before
