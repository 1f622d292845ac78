"""Fixtures, robots variants, sitemaps, changing and dying pages of the default test web."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from protego import Protego

from webgather.config import DEFAULT_USER_AGENT
from webgather.testweb import WebModel, WebParams, crawl_config_for, crawl_outcomes
from webgather.testweb.params import CHARSET_MODES, FIXTURE_KINDS, ROBOTS_KINDS
from webgather.testweb.response import Response
from webgather.testweb.wire import Rendered, Request
from webgather.urls import resolve_link

PARAMS = WebParams.for_tests(seed=1, port=8080)
MODEL = WebModel(PARAMS)


def header(response: Response, name: str) -> str:
    return next(v for k, v in response.headers if k.lower() == name.lower())


def test_every_fixture_kind_is_reachable_from_the_first_home_page() -> None:
    assert all(MODEL.hosts.fixture_count(0, kind) >= 1 for kind in FIXTURE_KINDS)
    seed = MODEL.home_url(0)
    outcomes = crawl_outcomes(MODEL, [seed], crawl_config_for(PARAMS, (seed,))).outcomes
    faults = Counter(o.fault for o in outcomes.values())
    missing = [kind for kind in FIXTURE_KINDS if kind not in faults and kind != "private"]
    assert missing == []
    errors = {o.error for o in outcomes.values()}
    assert {"reset", "truncated", "timeout", "too_large", "bomb", "redirect_loop", "robots", "robots_unavailable"} <= errors
    statuses = {o.status for o in outcomes.values()}
    assert {200, 301, 302, 404, 410, 429, 500, 503} <= statuses


def test_content_page_variants_are_all_present() -> None:
    infos = [MODEL.info(h, i) for h in range(MODEL.hosts.n_hosts) for i in range(int(MODEL.hosts.pages[h]))]
    assert {info.charset for info in infos} == set(CHARSET_MODES)
    assert any(info.gzip for info in infos) and any(info.base for info in infos) and any(info.nofollow for info in infos)
    assert any(info.dying for info in infos)
    assert {info.period_s for info in infos} == {None, 3600.0, 86400.0, 30 * 86400.0}
    assert set(MODEL.hosts.robots) == set(ROBOTS_KINDS)


def test_charset_modes_put_the_right_bytes_on_the_wire() -> None:
    seen = set()
    urls = MODEL.content_urls()
    for h in range(MODEL.hosts.n_hosts):
        for i in range(int(MODEL.hosts.pages[h])):
            info = MODEL.info(h, i)
            response = MODEL.page(urls[int(MODEL.hosts.offsets[h]) + i])
            body, content_type = response.body, header(response, "Content-Type")
            if info.charset == "bom":
                assert body.startswith(b"\xef\xbb\xbf") and "charset" not in content_type
            if info.charset == "cp1252_mislabeled":
                assert "utf-8" in content_type
                try:
                    body.decode("utf-8")
                    raise AssertionError("cp1252 body decoded as UTF-8")
                except UnicodeDecodeError:
                    pass
            if info.charset == "meta_only":
                assert b"charset=windows-1252" in body[:1024] and "charset" not in content_type
            seen.add(info.charset)
    assert seen == set(CHARSET_MODES)


def test_robots_variants_mean_what_they_say() -> None:
    agent = DEFAULT_USER_AGENT
    for h, kind in enumerate(MODEL.hosts.robots):
        name = MODEL.host_names[h]
        response = MODEL.robots(name)
        text = response.body.decode("utf-8", "replace")
        if kind == "redirect":
            assert response.status == 301
            response = MODEL.page(resolve_link(response.url, header(response, "Location")) or "")
            text = response.body.decode()
        rules = Protego.parse(text)
        url = MODEL.url(h, "/private/0")
        if kind in ("missing", "error"):
            assert response.status == (404 if kind == "missing" else response.status) and response.status >= 400
        elif kind == "garbage":
            for codec in ("utf-8", "latin-1", "cp1252"):
                parsed = Protego.parse(response.body.decode(codec, "replace"))
                assert parsed.can_fetch(url, agent) and parsed.crawl_delay(agent) is None and not list(parsed.sitemaps)
        elif kind == "agent":
            assert rules.can_fetch(MODEL.url(h, "/p/1"), agent) and not rules.can_fetch(MODEL.url(h, "/list?page=3&sort=new"), agent)
            assert not rules.can_fetch(MODEL.url(h, "/p/1"), "OtherBot/1.0")
        elif kind == "allow":
            assert rules.can_fetch(url, agent)
        else:
            assert not rules.can_fetch(url, agent)
            assert rules.can_fetch(MODEL.url(h, "/private/open/0"), agent) == (kind == "disallow")
            assert (rules.crawl_delay(agent) == PARAMS.crawl_delay_s) == (kind == "delay")
        assert bool(list(rules.sitemaps)) == (MODEL.hosts.sitemap[h] and kind not in ("garbage", "missing", "error"))


def test_sitemaps_list_orphans_that_nothing_links() -> None:
    sitemap = MODEL.sitemap(MODEL.host_names[0])
    orphans = [u for u in sitemap.follow_links if "/orphan/" in u]
    assert sitemap.status == 200 and orphans and b"&amp;sort=new" in sitemap.body
    linked = set()
    for url in MODEL.content_urls():
        linked.update(MODEL.page(url).follow_links)
    assert not linked & set(orphans)
    assert MODEL.sitemap(MODEL.host_names[MODEL.hosts.sitemap.index(False)]).status == 404


def test_changing_pages_keep_their_links_and_answer_conditionals() -> None:
    h, i = next((h, i) for h in range(MODEL.hosts.n_hosts) for i in range(1, int(MODEL.hosts.pages[h]))
                if MODEL.info(h, i).period_s == 3600.0)
    info = MODEL.info(h, i)
    url = MODEL.content_urls()[int(MODEL.hosts.offsets[h]) + i]
    t0 = PARAMS.epoch_s + info.phase_s + 10 * 3600.0 + 1.0
    first, later, same = MODEL.page(url, t0), MODEL.page(url, t0 + 3600.0), MODEL.page(url, t0 + 100.0)
    assert first.follow_links == later.follow_links and first.body != later.body
    assert first.etag != later.etag and first.etag == same.etag and first.body == same.body
    assert first.last_modified_s == PARAMS.epoch_s + info.phase_s + 10 * 3600.0
    assert first.valid_from_s <= t0 < first.valid_until_s == first.valid_from_s + 3600.0
    rendered = Rendered(first, 0)
    assert first.etag is not None
    assert rendered.is_not_modified(Request(b"GET", b"/", b"h", if_none_match=first.etag.encode()))
    assert not rendered.is_not_modified(Request(b"GET", b"/", b"h", if_none_match=later.etag.encode() if later.etag else b""))
    since = header(first, "Last-Modified").encode()
    assert rendered.is_not_modified(Request(b"GET", b"/", b"h", if_modified_since=since))
    assert not Rendered(later, 0).is_not_modified(Request(b"GET", b"/", b"h", if_modified_since=since))
    assert rendered.not_modified is not None and rendered.not_modified.startswith(b"HTTP/1.1 304")


def test_dying_pages_die_on_time_without_links() -> None:
    h, i = next((h, i) for h in range(MODEL.hosts.n_hosts) for i in range(int(MODEL.hosts.pages[h])) if MODEL.info(h, i).dying)
    info = MODEL.info(h, i)
    url = MODEL.content_urls()[int(MODEL.hosts.offsets[h]) + i]
    alive, dead = MODEL.page(url, info.die_at_s - 1.0), MODEL.page(url, info.die_at_s)
    assert alive.status == 200 and alive.follow_links == () and alive.valid_until_s <= info.die_at_s
    assert dead.status == info.die_status and dead.fault == "dead"


def test_redirects_traps_and_big_bodies() -> None:
    for path in ("/r/301/0", "/r/302/0", "/r/chain/0/0", "/r/loop/0/a", "/r/self/0", "/r/long/0/0"):
        response = MODEL.page(MODEL.url(0, path))
        assert response.status in (301, 302)
        assert resolve_link(response.url, header(response, "Location")) == response.location
    hops, url = 0, MODEL.url(0, "/r/long/0/0")
    while (response := MODEL.page(url)).location is not None:
        hops, url = hops + 1, response.location
    assert hops == PARAMS.long_chain_hops and url.endswith("/r/long/0/end") and response.status == 200
    loop = MODEL.page(MODEL.url(0, "/r/loop/0/a"))
    assert loop.location is not None and MODEL.page(loop.location).location == MODEL.url(0, "/r/loop/0/a")
    deep, lengths = MODEL.url(0, "/deep/0"), []
    for _ in range(5):
        response = MODEL.page(deep)
        lengths.append(len(response.url))
        deep = response.follow_links[0]
    assert all(b - a > PARAMS.trap_segment_chars for a, b in zip(lengths, lengths[1:]))
    assert MODEL.page(MODEL.url(0, "/cal/0/next/next/next/next/next")).status == 200
    assert len(MODEL.page(MODEL.url(0, "/big/0")).body) == PARAMS.oversize_bytes
    bomb = MODEL.page(MODEL.url(0, "/bomb/0"))
    assert bomb.content_encoding == "gzip" and bomb.payload_bytes == PARAMS.bomb_decoded_bytes
    assert len(bomb.body) * 100 < bomb.payload_bytes


def test_flaky_and_slow_fixtures_carry_their_recipe() -> None:
    flaky = MODEL.page(MODEL.url(0, "/flaky/0"))
    assert 1 <= flaky.fail_attempts <= 2 and flaky.fail_status in (429, 500, 503) and flaky.status == 200
    assert MODEL.page(MODEL.url(0, "/slow/0")).delay_s == PARAMS.slow_s
    assert MODEL.page(MODEL.url(0, "/slow/very/0")).delay_s == PARAMS.very_slow_s
    assert MODEL.page(MODEL.url(0, "/f/503/0")).headers[-1] == ("Retry-After", str(PARAMS.retry_after_s))
    assert MODEL.page(MODEL.url(0, "/f/truncated/0")).wire == "truncate"
    witness = MODEL.page(MODEL.url(0, "/w/flaky/0"))
    assert witness.status == 200 and witness.fault == "witness"
    none = WebModel(replace(PARAMS, faults=replace(PARAMS.faults, flaky=0.0)))
    assert none.page(none.url(0, "/flaky/0")).status == 404
