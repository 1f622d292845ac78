"""The robots gate in real crawls on loopback: eviction, expiry, an unreachable seed, a huge robots.txt."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from pathlib import Path

import pytest

from webgather.config import RobotsConfig
from webgather.runtime.launch.crawl import run_crawl

from robots_web import Answer, RobotsWeb, closed_port, config_for, log_entries, page

DISALLOW_PRIVATE = b"User-agent: *\nDisallow: /private/\n"


async def test_rules_evicted_from_memory_are_had_from_disk_and_obeyed(tmp_path: Path) -> None:
    hosts = [f"h{i:02d}.test" for i in range(20)]

    def routes(host: str, path: str) -> Answer:
        if path == "/robots.txt":
            return 200, DISALLOW_PRIVATE
        if path == "/":
            return 200, page("/private/secret", "/public/a", "/public/b")
        return 200, page()

    config = config_for(tmp_path, hosts, RobotsConfig(max_hosts=5))
    async with RobotsWeb(routes) as web:
        summary = await asyncio.wait_for(run_crawl(config, [web.url(h) for h in hosts]), 60)
    assert summary["finished"] is True
    assert web.paths("/private/") == [], "a disallowed URL was fetched"
    assert sorted(web.paths("/public/")) == sorted((h, p) for h in hosts for p in ("/public/a", "/public/b"))
    assert sorted(web.paths("/robots.txt")) == sorted((h, "/robots.txt") for h in hosts), "asked twice within its TTL"
    denied = [e["url"] for e in log_entries(tmp_path) if e.get("error") == "robots"]
    assert sorted(denied) == sorted(web.url(h, "/private/secret") for h in hosts)


async def test_more_hosts_than_max_hosts_every_page_fetched_one_robots_request_each(tmp_path: Path) -> None:
    # the scaled-down livelock: rules evicted while the host's pages waited were fetched again, forever
    hosts = [f"s{i:03d}.test" for i in range(300)]

    def routes(host: str, path: str) -> Answer:
        if path == "/robots.txt":
            return 404, b"none"
        if path == "/":
            return 200, page("/a", "/b")
        return 200, page()

    config = config_for(tmp_path, hosts, RobotsConfig(max_hosts=100))
    async with RobotsWeb(routes) as web:
        summary = await asyncio.wait_for(run_crawl(config, [web.url(h) for h in hosts]), 120)
    assert summary["finished"] is True
    assert sorted(web.paths("/robots.txt")) == sorted((h, "/robots.txt") for h in hosts)
    pages = sorted((h, p) for h, p in web.requests if p != "/robots.txt")
    assert pages == sorted((h, p) for h in hosts for p in ("/", "/a", "/b"))


async def test_changed_robots_txt_is_obeyed_after_the_rules_expire(tmp_path: Path) -> None:
    robots_served = 0

    def routes(host: str, path: str) -> Answer:
        nonlocal robots_served
        if path == "/robots.txt":
            robots_served += 1
            return 200, b"User-agent: *\nDisallow: /old/\n" if robots_served == 1 else b"User-agent: *\nDisallow: /new/\n"
        if path.startswith("/chain/"):
            n = int(path.rsplit("/", 1)[1])
            return 200, page(f"/chain/{n + 1}", f"/new/{n}", f"/old/{n}") if n < 12 else page()
        return 200, page()

    config = config_for(tmp_path, ["site.test"], RobotsConfig(ttl_s=1.0))
    config = dataclasses.replace(config, politeness=dataclasses.replace(config.politeness, min_delay_s=0.1))
    async with RobotsWeb(routes) as web:
        summary = await asyncio.wait_for(run_crawl(config, [web.url("site.test", "/chain/0")]), 60)
    assert summary["finished"] is True
    robots_at = [i for i, (_, p) in enumerate(web.requests) if p == "/robots.txt"]
    assert len(robots_at) >= 2, "robots.txt was never fetched again after its rules expired"
    second = robots_at[1]
    before, after = web.requests[:second], web.requests[second:]
    assert [p for _, p in before if p.startswith("/old/")] == []
    assert [p for _, p in after if p.startswith("/new/")] == [], "the new Disallow was ignored"
    assert [p for _, p in before if p.startswith("/new/")], "the first rules allowed /new/: some should be fetched"
    assert [p for _, p in after if p.startswith("/old/")], "the new rules allow /old/ again"
    denied = {str(e["url"]).split(":", 2)[2].split("/", 1)[1] for e in log_entries(tmp_path) if e.get("error") == "robots"}
    assert any(p.startswith("new/") for p in denied)


async def test_closed_port_seed_gives_up_soon_with_a_reason_and_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = closed_port()
    seed = f"http://closed.test:{port}/"
    robots = RobotsConfig(error_retry_s=0.05, retry_factor=2.0, max_tries=3)
    config = config_for(tmp_path, ["closed.test"], robots)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        summary = await asyncio.wait_for(run_crawl(config, [seed]), 30)
    assert time.monotonic() - started < 10
    assert summary["finished"] is True
    entries = log_entries(tmp_path)
    robots_tries = [e for e in entries if e.get("kind") == "robots"]
    assert len(robots_tries) == 3 and all(e["error"] == "connect" for e in robots_tries)
    [dropped] = [e for e in entries if e.get("kind") == "page"]
    assert dropped["url"] == seed and dropped["error"] == "robots_unavailable"
    assert "connect" in str(dropped["detail"])
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("webgather")]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert f"closed.test:{port}" in warnings[0].getMessage()


async def test_robots_txt_over_the_body_limit_is_obeyed_from_its_first_500_kib(tmp_path: Path) -> None:
    filler = b"# " + b"x" * 97 + b"\n"
    body = DISALLOW_PRIVATE + filler * (700 * 1024 // len(filler))
    assert len(body) > 700 * 1000

    def routes(host: str, path: str) -> Answer:
        if path == "/robots.txt":
            return 200, body
        if path == "/":
            return 200, page("/private/x", "/public/y")
        return 200, page()

    # pages are limited to 600 KiB here, below the robots.txt: its prefix must still be read
    config = config_for(tmp_path, ["big.test"], RobotsConfig(), max_body_bytes=600 * 1024)
    async with RobotsWeb(routes) as web:
        summary = await asyncio.wait_for(run_crawl(config, [web.url("big.test")]), 60)
    assert summary["finished"] is True
    assert web.paths("/private/") == []
    assert web.paths("/public/") == [("big.test", "/public/y")]
    errors = {e["url"]: e.get("error") for e in log_entries(tmp_path) if e.get("kind") == "page"}
    assert errors[web.url("big.test", "/private/x")] == "robots"
    assert "robots_unavailable" not in errors.values()
