"""Back-off by the health of the host, not by the count of failing URLs (issue 13, item 6).

Pure: explicit ``now`` values, no clock, no network.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from webgather.config import CrawlConfig, FrontierConfig, PolitenessConfig
from webgather.fetch.model import FetchResult
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.frontier.policy import Politeness
from webgather.outcome import decide
from webgather.urls import fingerprint


def make(**kw: float) -> Politeness:
    base = dict(min_delay_s=0.5, per_host_connections=1, per_ip_connections=4,
                backoff_base_s=2.0, backoff_max_s=60.0, retry_after_max_s=100.0)
    base.update(kw)
    return Politeness(PolitenessConfig(**base))  # type: ignore[arg-type]


def fail(p: Politeness, now: float, retry_after_s: float | None = None) -> float:
    """One failed request to host "a" ending at ``now``; returns how long the host then waits."""
    got, _ = p.next_ready(now)
    assert got == "a"
    p.complete("a", now, error=True, retry_after_s=retry_after_s)
    return p.state("a").next_allowed_at - now


def test_retry_after_replaces_the_exponential_step_across_failing_urls() -> None:
    p = make()
    p.set_head("a", 0.0, 0.0)
    now, waits = 0.0, []
    for _ in range(6):  # six different URLs in a row, each a 503 with Retry-After: 1
        waits.append(fail(p, now, retry_after_s=1.0))
        now += waits[-1]
    assert waits == [1.0] * 6  # not 2, 4, 8, 16, 32, 64
    assert p.state("a").errors == 6  # the streak still counts, for failures without Retry-After
    assert fail(p, now) == 60.0  # 2 * 2**6 = 128, capped at backoff_max_s


def test_a_success_resets_the_streak_and_the_cap_holds() -> None:
    p = make(backoff_max_s=10.0)
    p.set_head("a", 0.0, 0.0)
    now, waits = 0.0, []
    for _ in range(5):
        waits.append(fail(p, now))
        now += waits[-1]
    assert waits == [2.0, 4.0, 8.0, 10.0, 10.0]
    got, _ = p.next_ready(now)
    assert got == "a"
    p.complete("a", now)
    assert p.state("a").errors == 0 and p.state("a").next_allowed_at == now + 0.5
    assert fail(p, now + 0.5) == 2.0  # a new streak starts at the base step


def test_retry_after_is_clamped_and_never_below_the_normal_delay() -> None:
    p = make(min_delay_s=3.0, retry_after_max_s=100.0)
    p.set_head("a", 0.0, 0.0)
    assert fail(p, 0.0, retry_after_s=10_000.0) == 100.0
    assert fail(p, 100.0, retry_after_s=1.0) == 3.0  # min_delay_s beats a shorter Retry-After
    assert fail(p, 103.0, retry_after_s=0.0) == 3.0


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


@pytest.mark.parametrize("persistent", [False, True])
def test_a_url_that_keeps_failing_does_not_hold_its_hosts_other_urls(persistent: bool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = Frontier.open(tmp_path / "state" if persistent else None, FrontierConfig(),
                      PolitenessConfig(min_delay_s=1.0, backoff_base_s=2.0), n_buckets=16)
    f.add([_item("http://a.test/bad"), _item("http://a.test/1"), _item("http://a.test/2")], 0.0)
    bad, _ = f.next_ready(0.0)
    assert bad is not None and bad.url == "http://a.test/bad"
    f.retry(bad, 0.0, not_before=8.0)  # its own retry in 8 s; the host backs off one step (2 s)
    assert f.pending() == 3 and f.in_flight() == 0 and not f.is_done()
    assert f.next_ready(1.9) == (None, 2.0)
    one, _ = f.next_ready(2.0)
    assert one is not None and one.url == "http://a.test/1"  # not held until 8 s by the failing URL
    f.complete(one, 2.5)
    assert f.policy.state("a.test").errors == 0  # the host answered: its streak is over
    two, _ = f.next_ready(3.5)
    assert two is not None and two.url == "http://a.test/2"
    f.complete(two, 4.0)
    assert f.next_ready(5.0) == (None, 8.0)  # the parked retry is what wakes the node
    again, _ = f.next_ready(8.0)
    assert again is not None and (again.url, again.attempt) == ("http://a.test/bad", 1)
    f.complete(again, 8.1)
    assert f.is_done()
    f.close()


def test_a_retry_due_with_the_host_lets_another_url_go_first() -> None:
    f = Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=1.0, backoff_base_s=2.0), n_buckets=16)
    f.add([_item("http://a.test/bad"), _item("http://a.test/1")], 0.0)
    bad, _ = f.next_ready(0.0)
    assert bad is not None and bad.url == "http://a.test/bad"
    f.retry(bad, 0.0, not_before=2.0)  # the URL's first retry step = the host's first back-off step
    one, _ = f.next_ready(2.05)  # (a timer that fires a little late)
    assert one is not None and one.url == "http://a.test/1"  # not the failing URL once more
    f.complete(one, 2.1)
    assert f.policy.state("a.test").errors == 0
    again, _ = f.next_ready(3.1)
    assert again is not None and (again.url, again.attempt) == ("http://a.test/bad", 1)


def test_a_url_failing_again_holds_the_hosts_streak_instead_of_lengthening_it() -> None:
    p = make()
    p.set_head("a", 0.0, 0.0)
    assert fail(p, 0.0) == 2.0  # URL A
    assert fail(p, 2.0) == 4.0  # URL B: two different URLs in a row
    got, _ = p.next_ready(6.0)
    assert got == "a"
    p.complete("a", 6.0, error=True, again=True)  # A's retry fails: still two
    assert p.state("a").errors == 2 and p.state("a").next_allowed_at == 10.0
    got, _ = p.next_ready(10.0)
    p.complete("a", 10.0)
    got, _ = p.next_ready(10.5)
    p.complete("a", 10.5, error=True, again=True)  # a retry failing after a success starts a streak
    assert p.state("a").errors == 1 and p.state("a").next_allowed_at == 12.5


def test_two_broken_urls_retried_in_turn_do_not_stall_their_host() -> None:
    f = Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=1.0, backoff_base_s=2.0), n_buckets=16)
    f.add([_item("http://a.test/500"), _item("http://a.test/502")], 0.0)
    now, order = 0.0, []
    while not f.is_done():  # each URL: its first attempt and two retries, as the node runs them
        got, wake = f.next_ready(now)
        if got is None:
            now = wake
            continue
        order.append((got.url[-3:], got.attempt))
        if got.attempt < 2:
            f.retry(got, now, not_before=now + 2.0 * 2**got.attempt)
        else:
            f.complete(got, now, error=True)
    assert order == [("500", 0), ("502", 0), ("500", 1), ("502", 1), ("500", 2), ("502", 2)]
    assert f.policy.state("a.test").errors == 2
    assert f.policy.state("a.test").next_allowed_at - now == 4.0  # not 2 * 2**5 = 64 s
    assert now <= 20.0


@pytest.mark.parametrize("persistent", [False, True])
def test_a_bucket_hand_over_takes_a_parked_retry_along_at_once(persistent: bool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = Frontier.open(tmp_path / "state" if persistent else None, FrontierConfig(), PolitenessConfig(), n_buckets=16)
    f.add([_item("http://a.test/busy")], 0.0)
    busy, _ = f.next_ready(0.0)
    assert busy is not None
    f.retry(busy, 0.0, not_before=500.0, retry_after_s=500.0)  # Retry-After: 500
    assert "a.test" in f.in_flight_items.values()  # a hand-over waits for hosts in flight...
    assert f.parked.release_host("a.test", 1.0) == 1  # ...so the cluster releases it at once
    assert "a.test" not in f.in_flight_items.values() and (f.pending(), f.in_flight()) == (1, 0)
    state = f.export_bucket(f.bucket_for("a.test"))
    assert [(i.url, i.attempt) for i in state.items] == [("http://a.test/busy", 1)]
    assert state.hosts[0].wait_s == 500.0  # the host's clock goes along (frontier time: 0)
    f.close()


def test_a_retry_without_error_goes_back_at_once_and_holds_the_host() -> None:
    f = Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=1.0), n_buckets=16)
    f.add([_item("http://a.test/1"), _item("http://a.test/2")], 0.0)
    first, _ = f.next_ready(0.0)
    assert first is not None
    f.retry(first, 0.0, not_before=math.inf, error=False)  # e.g. robots.txt is owed first
    assert len(f.parked) == 0 and f.pending() == 2 and f.next_ready(100.0) == (None, math.inf)
    f.defer_host("a.test", 5.0)  # whoever held the host lets it go
    again, _ = f.next_ready(5.0)
    assert again is not None and (again.url, again.attempt) == ("http://a.test/1", 1)


def _result(status: int, headers: tuple[tuple[str, str], ...] = ()) -> FetchResult:
    return FetchResult(url="http://a.test/x", started_at=0.0, elapsed_s=0.1, status=status, response_headers=headers)


def test_decide_waits_for_retry_after_else_the_per_url_exponential_step() -> None:
    config = CrawlConfig()
    config = dataclasses.replace(config, politeness=dataclasses.replace(config.politeness, backoff_base_s=2.0,
                                                                        backoff_max_s=5.0))
    url = _item("http://a.test/x")
    busy = decide(dataclasses.replace(url, attempt=1), _result(503, (("Retry-After", "1"),)), config, 0.0)
    assert (busy.retry, busy.retry_in_s, busy.retry_after_s) == (True, 1.0, 1.0)
    broken = decide(dataclasses.replace(url, attempt=1), _result(500), config, 0.0)
    assert (broken.retry, broken.retry_in_s, broken.retry_after_s) == (True, 4.0, None)
    later = decide(url, _result(500), dataclasses.replace(config, fetch=dataclasses.replace(config.fetch, max_retries=9)), 0.0)
    assert later.retry_in_s == 2.0
    assert decide(dataclasses.replace(url, attempt=1), _result(429, (("Retry-After", "0"),)), config, 0.0).retry_in_s == 0.0
    capped = decide(dataclasses.replace(url, attempt=1), _result(502), dataclasses.replace(
        config, politeness=dataclasses.replace(config.politeness, backoff_base_s=4.0)), 0.0)
    assert capped.retry_in_s == 5.0  # 4 * 2**1 = 8, capped at backoff_max_s


def test_a_retry_after_past_the_longest_back_off_gives_the_url_up_and_caps_the_host_hold() -> None:
    config = CrawlConfig()  # retry_after_max_s 600: an hour's Retry-After held the host and the crawl's end 2 h
    url = _item("http://a.test/x")
    decision = decide(url, _result(503, (("Retry-After", "3600"),)), config, 0.0)
    assert (decision.retry, decision.error, decision.host_error) == (False, "retry_after", True)
    assert decision.retry_after_s == config.politeness.retry_after_max_s == 600.0
    short_backoff = dataclasses.replace(config, politeness=dataclasses.replace(config.politeness, backoff_max_s=0.1))
    assert decide(url, _result(429, (("Retry-After", "1"),)), short_backoff, 0.0).retry  # not the back-off's cap
    assert decide(url, _result(503, (("Retry-After", "600"),)), config, 0.0).retry  # within: waited for
