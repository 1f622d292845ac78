"""webgather.robots.cache: the per-host robots.txt state machine, driven by fake time."""

from __future__ import annotations

import pytest

from webgather.errors import ConfigError
from webgather.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    Backoff,
    GaveUp,
    Known,
    NeedFetch,
    Pending,
    RobotsCache,
    RobotsRules,
)

H = "site.example"
RULES = RobotsRules.from_bytes(b"User-agent: *\nDisallow: /x\n", "webgather")


def cache(**kwargs: float) -> RobotsCache:
    settings: dict[str, float] = {"ttl_s": 100.0, "error_retry_s": 10.0}
    settings.update(kwargs)
    return RobotsCache(**settings)  # type: ignore[arg-type]


def test_unknown_host_needs_a_fetch_then_pending_then_known() -> None:
    c = cache()
    assert c.state(H, 0.0) == NeedFetch(0)
    assert c.begin_fetch(H, 1.0) == Pending(1.0, 0)
    assert c.state(H, 2.0) == Pending(1.0, 0)
    assert c.record(H, 3.0, RULES) == Known(RULES, 103.0)
    state = c.state(H, 50.0)
    assert isinstance(state, Known) and state.rules is RULES
    assert not state.rules.allowed("http://site.example/x")


def test_known_rules_expire_after_ttl() -> None:
    c = cache()
    c.begin_fetch(H, 0.0)
    c.record(H, 0.0, RULES)
    assert isinstance(c.state(H, 99.9), Known)
    assert c.state(H, 100.0) == NeedFetch(0)
    assert len(c) == 0


def test_4xx_means_allow_all_known() -> None:
    c = cache()
    c.begin_fetch(H, 0.0)
    state = c.record(H, 0.0, ALLOW_ALL)
    assert isinstance(state, Known) and state.rules.allowed("http://site.example/anything")


def test_failure_backs_off_then_needs_a_fetch_with_the_count_kept() -> None:
    c = cache()
    c.begin_fetch(H, 0.0)
    assert c.record(H, 5.0, None) == Backoff(15.0, 1)
    assert c.state(H, 14.9) == Backoff(15.0, 1)
    assert c.state(H, 15.0) == NeedFetch(1)
    assert c.begin_fetch(H, 16.0) == Pending(16.0, 1)
    assert c.record(H, 17.0, None) == Backoff(27.0, 2)


def test_gives_up_after_max_failures_and_tries_afresh_after_ttl() -> None:
    c = cache(max_failures=3)
    now = 0.0
    for failures in (1, 2):
        c.begin_fetch(H, now)
        assert c.record(H, now, None) == Backoff(now + 10.0, failures)
        now += 10.0
        assert c.state(H, now) == NeedFetch(failures)
    c.begin_fetch(H, now)
    assert c.record(H, now, None) == GaveUp(3, now + 100.0)
    assert c.state(H, now + 99.0) == GaveUp(3, now + 100.0)
    assert c.state(H, now + 100.0) == NeedFetch(0)


def test_success_resets_the_failure_count() -> None:
    c = cache(max_failures=2)
    c.begin_fetch(H, 0.0)
    c.record(H, 0.0, None)
    c.begin_fetch(H, 10.0)
    c.record(H, 10.0, RULES)
    assert isinstance(c.state(H, 20.0), Known)
    c.begin_fetch(H, 200.0)  # refresh after expiry
    assert c.record(H, 200.0, None) == Backoff(210.0, 1)


def test_lost_pending_fetch_times_out() -> None:
    c = cache(max_pending_s=30.0)
    c.begin_fetch(H, 0.0)
    assert isinstance(c.state(H, 29.0), Pending)
    assert c.state(H, 30.0) == NeedFetch(0)
    assert isinstance(c.record(H, 31.0, RULES), Known)  # a late answer still counts


def test_record_without_begin_and_forced_refresh() -> None:
    c = cache()
    assert c.record(H, 0.0, None) == Backoff(10.0, 1)
    c.record(H, 1.0, DISALLOW_ALL)
    assert c.begin_fetch(H, 2.0) == Pending(2.0, 0)  # from Known: a forced refresh
    assert c.state(H, 3.0) == Pending(2.0, 0)


def test_lru_eviction_of_settled_hosts_only() -> None:
    c = cache(max_hosts=2)
    for i, host in enumerate(["a", "b"]):
        c.begin_fetch(host, float(i))
        c.record(host, float(i), RULES)
    c.begin_fetch("waiting", 0.0)
    c.record("waiting", 0.0, None)  # Backoff: never evicted
    c.begin_fetch("inflight", 0.0)  # Pending: never evicted
    assert isinstance(c.state("a", 5.0), Known)  # "a" is now the most recent
    c.begin_fetch("c", 6.0)
    c.record("c", 6.0, RULES)
    assert c.state("b", 7.0) == NeedFetch(0)  # least recently used: evicted
    assert isinstance(c.state("a", 7.0), Known)
    assert isinstance(c.state("c", 7.0), Known)
    assert c.state("waiting", 7.0) == Backoff(10.0, 1)
    assert isinstance(c.state("inflight", 7.0), Pending)
    assert len(c) == 4


def test_many_hosts_stay_bounded() -> None:
    c = cache(max_hosts=100)
    for i in range(1000):
        c.record(f"h{i}", float(i), ALLOW_ALL)
    assert len(c) == 100
    assert isinstance(c.state("h999", 1000.0), Known)
    assert c.state("h0", 1000.0) == NeedFetch(0)


def test_forget() -> None:
    c = cache()
    c.record(H, 0.0, RULES)
    c.record("other", 0.0, None)
    c.forget(H)
    c.forget("other")
    c.forget("never-seen")
    assert len(c) == 0 and c.state(H, 1.0) == NeedFetch(0)


@pytest.mark.parametrize(
    "bad", [{"max_hosts": 0}, {"max_failures": 0}, {"ttl_s": -1.0}, {"error_retry_s": -5.0}]
)
def test_bad_settings_are_config_errors(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        cache(**bad)
