"""webgather.robots.gate: every host's robots state and the action each URL gets, on fake time."""

from __future__ import annotations

import math

import pytest

from webgather.errors import ConfigError
from webgather.robots import (
    ALLOW_ALL,
    Allow,
    Dead,
    Deny,
    FetchRobots,
    RobotsGate,
    RobotsRules,
    Wait,
    Waiting,
)

H = "site.example"
URL = "http://site.example/x/page"
OPEN = "http://site.example/open"
RULES = RobotsRules.from_bytes(b"User-agent: *\nDisallow: /x\n", "webgather")


def gate(**kwargs: float) -> RobotsGate:
    settings: dict[str, float] = {"ttl_s": 100.0, "error_retry_s": 10.0, "retry_factor": 4.0}
    settings.update(kwargs)
    return RobotsGate(**settings)  # type: ignore[arg-type]


def known(g: RobotsGate, host: str, now: float, rules: RobotsRules = RULES) -> None:
    assert isinstance(g.check(host, f"http://{host}/", now), FetchRobots)
    g.learned(host, now, rules)


def test_new_host_fetch_first_then_wait_then_rules_obeyed() -> None:
    g = gate()
    assert g.check(H, OPEN, 0.0) == FetchRobots(0)
    assert g.check(H, OPEN, 1.0) == Wait(math.inf)  # pending: one fetch per host
    g.learned(H, 2.0, RULES)
    assert g.check(H, URL, 3.0) == Deny("robots")
    assert g.check(H, OPEN, 3.0) == Allow(RULES)


def test_expired_rules_are_fetched_again_never_allowed() -> None:
    g = gate()
    known(g, H, 0.0)
    assert g.check(H, URL, 99.9) == Deny("robots")
    assert g.check(H, URL, 100.0) == FetchRobots(0)  # expired: fetch first, not "allow"
    assert g.check(H, URL, 100.5) == Wait(math.inf)
    g.learned(H, 101.0, ALLOW_ALL)  # the new robots.txt
    assert g.check(H, URL, 102.0) == Allow(ALLOW_ALL)


def test_evicted_host_gets_fetch_robots_on_its_next_url_and_takes_back_its_kept_rules() -> None:
    g = gate(max_hosts=2)
    for i, host in enumerate(["a", "b", "c"]):
        known(g, host, float(i))
    assert len(g) == 2
    assert g.check("a", "http://a/x", 5.0) == FetchRobots(0)  # evicted: never "allow" (the shell looks on disk)
    assert g.check("b", "http://b/x", 5.0) == Deny("robots")
    g.learned("a", 5.0, RULES, expires_at=100.0)  # handed back with its first fetch's expiry
    assert g.check("a", "http://a/x", 6.0) == Deny("robots")
    assert g.check("a", "http://a/x", 100.0) == FetchRobots(0)
    g.give_up("z", 6.0, "dns", "host does not resolve", until=50.0)
    assert g.check("z", "http://z/", 49.0) == Deny("dns", "host does not resolve")
    assert g.check("z", "http://z/", 50.0) == FetchRobots(0)


def test_eviction_is_least_recently_asked_and_spares_unsettled_hosts() -> None:
    g = gate(max_hosts=2)
    known(g, "a", 0.0)
    known(g, "b", 1.0)
    g.check("inflight", "http://inflight/", 0.0)
    g.check("failing", "http://failing/", 0.0)
    g.failed("failing", 0.0, "HTTP 503")
    assert g.check("a", "http://a/ok", 2.0) == Allow(RULES)  # "a" is now the most recent
    known(g, "c", 3.0)
    assert isinstance(g.check("b", "http://b/ok", 4.0), FetchRobots)
    assert g.check("a", "http://a/ok", 4.0) == Allow(RULES)
    assert g.check("inflight", "http://inflight/", 4.0) == Wait(math.inf)
    assert g.check("failing", "http://failing/", 4.0) == Wait(10.0)


def test_a_failing_robots_txt_retries_on_a_growing_schedule_then_gives_up_with_reason() -> None:
    g = gate(max_tries=4)
    now, waits = 0.0, []
    assert g.check(H, URL, now) == FetchRobots(0)
    for tries in (1, 2, 3):
        state = g.failed(H, now, "HTTP 503")
        assert isinstance(state, Waiting) and state.failures == tries and state.reason == "HTTP 503"
        waits.append(state.at - now)
        assert g.check(H, URL, state.at - 0.001) == Wait(state.at)
        now = state.at
        assert g.check(H, URL, now) == FetchRobots(tries)
    assert waits == [10.0, 40.0, 160.0]
    dead = g.failed(H, now, "HTTP 503")
    assert dead == Dead("robots_unavailable", "robots.txt failed 4 times in a row, last: HTTP 503", now + 100.0)
    assert g.check(H, OPEN, now + 1.0) == Deny("robots_unavailable", dead.detail)
    assert g.check(H, OPEN, now + 100.0) == FetchRobots(0)  # tried afresh after ttl_s


def test_a_refused_connection_gets_the_short_schedule_by_default() -> None:
    g = RobotsGate()
    now, waits = 0.0, []
    assert g.check(H, URL, now) == FetchRobots(0)
    for tries in (1, 2):
        state = g.failed(H, now, "connect")
        assert isinstance(state, Waiting)
        waits.append(state.at - now)
        now = state.at
        assert g.check(H, URL, now) == FetchRobots(tries)
    assert waits == [1.0, 2.0]
    dead = g.failed(H, now, "connect")
    assert isinstance(dead, Dead) and dead.detail == "robots.txt failed 3 times in a row, last: connect"
    assert now == 3.0  # a dead seed is given up 3 s after its first refusal, not 10 min


def test_the_default_schedule_of_a_5xx_robots_txt_gives_up_in_about_a_minute() -> None:
    g = RobotsGate()
    now = 0.0
    g.check(H, URL, now)
    while isinstance(state := g.failed(H, now, "HTTP 503"), Waiting):
        now = state.at
        assert g.check(H, URL, now) == FetchRobots(state.failures)
    assert state.detail == "robots.txt failed 4 times in a row, last: HTTP 503"
    assert now == 65.0  # 5 + 15 + 45 s of waiting (the requests' own time comes on top)


def test_success_resets_the_failure_count() -> None:
    g = gate(max_tries=2)
    g.check(H, URL, 0.0)
    g.failed(H, 0.0, "HTTP 503")
    assert g.check(H, URL, 10.0) == FetchRobots(1)
    g.learned(H, 10.0, RULES)
    assert g.check(H, URL, 200.0) == FetchRobots(0)  # expired
    assert isinstance(g.failed(H, 200.0, "timeout"), Waiting)


def test_dns_give_up_denies_at_once() -> None:
    g = gate()
    g.check(H, URL, 0.0)
    g.give_up(H, 0.0, "dns", "host does not resolve")
    assert g.check(H, OPEN, 1.0) == Deny("dns", "host does not resolve")


def test_handed_over_host_waits_for_its_gap_then_fetches() -> None:
    g = gate()
    assert g.hold(H, 0.0, 5.0) == Wait(5.0)
    assert g.check(H, URL, 4.0) == Wait(5.0)
    assert g.check(H, URL, 5.0) == FetchRobots(0)
    assert g.hold(H, 5.5, 9.0) is None  # a fetch under way: nothing more owed
    known(g, "other", 0.0)
    assert g.hold("other", 1.0, 5.0) is None  # rules known already: nothing owed
    assert g.hold("late", 6.0, 5.0) is None  # the gap is over


def test_obey_false_allows_everything_and_fetches_nothing() -> None:
    g = gate(obey=False)
    assert g.hold(H, 0.0, 5.0) is None
    assert g.check(H, URL, 0.0) == Allow(ALLOW_ALL)


def test_many_hosts_stay_bounded_and_forget() -> None:
    g = gate(max_hosts=100)
    for i in range(1000):
        known(g, f"h{i}", float(i), ALLOW_ALL)
    assert len(g) == 100
    g.forget("h999")
    g.forget("never-seen")
    assert len(g) == 99
    assert g.check("h999", "http://h999/", 1000.0) == FetchRobots(0)


@pytest.mark.parametrize(
    "bad", [{"max_hosts": 0}, {"max_tries": 0}, {"ttl_s": 0.0}, {"error_retry_s": -5.0}, {"retry_factor": 0.5},
            {"unreachable_tries": 0}, {"unreachable_retry_s": -1.0}]
)
def test_bad_settings_are_config_errors(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        gate(**bad)


def test_a_robots_retry_never_comes_sooner_than_the_hosts_politeness_delay() -> None:
    # error_retry_s under the host's delay: the retry (a request like any other) waits the delay
    g = gate(error_retry_s=0.01, retry_factor=1.0, min_gap_s=0.3)
    assert g.check(H, URL, 5.0) == FetchRobots(0)
    state = g.failed(H, 5.0, "http 503")
    assert isinstance(state, Waiting) and state.at == pytest.approx(5.3)
    assert g.check(H, URL, 5.2) == Wait(state.at)
    assert g.check(H, URL, 5.3) == FetchRobots(1)


def test_counts_give_every_host_one_state() -> None:
    g = gate(max_tries=2)
    known(g, "allowed.example", 0.0)
    known(g, "old.example", -200.0)  # its rules expired at -100
    assert isinstance(g.check("fetching.example", "http://fetching.example/", 0.0), FetchRobots)
    assert isinstance(g.check("waiting.example", "http://waiting.example/", 0.0), FetchRobots)
    assert isinstance(g.failed("waiting.example", 0.0, "http 503"), Waiting)
    assert isinstance(g.check("dead.example", "http://dead.example/", 0.0), FetchRobots)
    g.give_up("dead.example", 0.0, "robots_unavailable", "503 four times")
    assert g.counts(1.0) == {"allowed": 1, "dead": 1, "expired": 1, "fetching": 1, "waiting": 1}
    assert g.counts(500.0) == {"allowed": 0, "dead": 0, "expired": 3, "fetching": 1, "waiting": 1}


def test_peek_answers_from_live_rules_only_and_starts_nothing() -> None:
    g = gate()
    assert g.peek(H, OPEN, 0.0) is None
    assert g.check(H, OPEN, 0.0) == FetchRobots(0)  # peek did not make the host pending
    g.learned(H, 1.0, RULES)
    assert g.peek(H, OPEN, 2.0) == Allow(RULES) and g.peek(H, URL, 2.0) == Deny("robots")
    assert g.peek(H, OPEN, 101.0) is None  # expired
    g.give_up("d", 0.0, "dns", "host does not resolve")
    assert g.peek("d", "http://d/", 1.0) == Deny("dns", "host does not resolve")
    assert gate(obey=False).peek(H, URL, 0.0) == Allow(ALLOW_ALL)
