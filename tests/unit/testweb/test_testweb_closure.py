"""The closure's semantics under different crawl limits (no HTTP: see the integration test for that)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from webgather.config import CrawlConfig, RobotsConfig, ScopeConfig
from webgather.errors import ConfigError, SeedError
from webgather.testweb import WebModel, WebParams, closure, crawl_config_for, crawl_outcomes

MODEL = WebModel(WebParams.for_tests(seed=4, port=8080))
SEED = MODEL.home_url(0)
BASE = crawl_config_for(MODEL.params, (SEED,))


def with_fetch(**changes: object) -> CrawlConfig:
    return replace(BASE, fetch=replace(BASE.fetch, **changes))  # type: ignore[arg-type]


def fetched_paths(config: CrawlConfig, prefix: str) -> set[str]:
    return {u.split(":8080", 1)[1] for u in closure(MODEL, [SEED], config) if u.split(":8080", 1)[1].startswith(prefix)}


def test_closure_is_the_fetched_set_of_the_outcomes_and_deterministic() -> None:
    first = crawl_outcomes(MODEL, [SEED], BASE)
    again = crawl_outcomes(WebModel(WebParams.for_tests(seed=4, port=8080)), [SEED], BASE)
    assert first.fetched == again.fetched and first.outcomes == again.outcomes
    assert set(first.fetched) == closure(MODEL, [SEED], BASE)
    blocked = {u for u, o in first.outcomes.items() if o.error in ("robots", "robots_unavailable")}
    assert blocked and not blocked & first.fetched
    assert SEED in first.fetched and MODEL.url(0, "/sitemap.xml") in first.fetched
    assert first.outcomes[MODEL.url(0, "/sitemap.xml")].kind == "sitemap"


def test_flaky_pages_succeed_only_with_enough_retries() -> None:
    flaky = MODEL.page(MODEL.url(0, "/flaky/0"))
    witness = MODEL.url(0, "/w/flaky/0")
    enough = crawl_outcomes(MODEL, [SEED], with_fetch(max_retries=flaky.fail_attempts))
    short = crawl_outcomes(MODEL, [SEED], with_fetch(max_retries=flaky.fail_attempts - 1))
    assert witness in enough.fetched and witness not in short.fetched
    assert enough.outcomes[flaky.url].attempts == flaky.fail_attempts + 1
    assert short.outcomes[flaky.url].status == flaky.fail_status


def test_redirect_limit_cuts_long_chains() -> None:
    for limit in (0, 2, 5, 9):
        steps = fetched_paths(with_fetch(max_redirects=limit), "/r/long/0/")
        expected = min(limit + 1, MODEL.params.long_chain_hops) + (limit >= MODEL.params.long_chain_hops)
        assert len(steps) == expected, (limit, steps)
    outcomes = crawl_outcomes(MODEL, [SEED], BASE).outcomes
    assert outcomes[MODEL.url(0, "/r/self/0")].error == "redirect_loop"
    assert outcomes[MODEL.url(0, "/r/loop/0/b")].error is None


def test_scope_bounds_the_traps() -> None:
    for repeats in (1, 3, 5):
        config = replace(BASE, scope=replace(BASE.scope, max_repeated_segments=repeats))
        assert len(fetched_paths(config, "/cal/0")) == repeats + 1
    short = replace(BASE, scope=replace(BASE.scope, max_url_length=120))
    long = replace(BASE, scope=replace(BASE.scope, max_url_length=400))
    assert 1 <= len(fetched_paths(short, "/deep/0")) < len(fetched_paths(long, "/deep/0"))


def test_limits_decide_timeouts_bodies_and_bombs() -> None:
    generous = with_fetch(total_timeout_s=MODEL.params.very_slow_s * 2, max_body_bytes=MODEL.params.oversize_bytes,
                          max_decoded_bytes=MODEL.params.bomb_decoded_bytes)
    strict = closure(MODEL, [SEED], BASE)
    loose = closure(MODEL, [SEED], generous)
    for kind in ("very_slow", "oversized", "bomb"):
        witness = MODEL.url(0, f"/w/{kind}/0")
        assert witness in loose and witness not in strict, kind
    for kind in ("slow", "non_html", "truncated", "not_found"):
        witness = MODEL.url(0, f"/w/{kind}/0")
        assert (witness in strict) == (kind == "slow"), kind


def test_robots_obeyed_or_not() -> None:
    obeying = crawl_outcomes(MODEL, [SEED], BASE)
    ignoring = crawl_outcomes(MODEL, [SEED], replace(BASE, robots=RobotsConfig(obey=False)))
    disallowed = {u for u, o in obeying.outcomes.items() if o.error in ("robots", "robots_unavailable")}
    assert disallowed and disallowed <= ignoring.fetched
    assert MODEL.url(0, "/sitemap.xml") in obeying.fetched - ignoring.fetched  # no robots.txt read, no sitemaps
    delays = {r.crawl_delay_s for r in obeying.robots.values()}
    assert MODEL.params.crawl_delay_s in delays
    unavailable = [r for r in obeying.robots.values() if not r.available]
    assert unavailable and all(r.attempts == 3 and r.drop_error == "robots_unavailable" for r in unavailable)


def test_time_changes_statuses_never_the_set() -> None:
    early = crawl_outcomes(MODEL, [SEED], BASE, now_s=MODEL.params.epoch_s)
    late = crawl_outcomes(MODEL, [SEED], BASE, now_s=MODEL.params.epoch_s + 10 * MODEL.params.death_horizon_s)
    assert early.fetched == late.fetched
    assert any(o.fault == "dead" for o in late.outcomes.values())
    assert not any(o.fault == "dead" for o in early.outcomes.values())


def test_seed_hosts_scope_and_bad_inputs() -> None:
    single = replace(BASE, scope=ScopeConfig(mode="seed-hosts", max_url_length=300))
    assert all(":8080" in u and u.startswith("http://h0001.") for u in closure(MODEL, [SEED], single))
    with pytest.raises(ConfigError):
        closure(MODEL, [SEED], replace(BASE, max_pages=10))
    with pytest.raises(SeedError):
        closure(MODEL, ["ftp://nowhere"], BASE)
    outside = crawl_outcomes(MODEL, ["http://outside.web.test:8080/"], BASE)
    assert outside.outcomes["http://outside.web.test:8080/"].error == "dns"
