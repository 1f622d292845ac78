"""robots.txt requests in real crawls on loopback: the per-IP cap, node concurrency, a redirect
target's clock, a dead seed's short schedule, rules reused on resume."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from webgather.config import RobotsConfig
from webgather.runtime.launch.crawl import run_crawl

from robots_web import Answer, RobotsWeb, closed_port, config_for, log_entries, page


def _hosts(n: int, prefix: str = "h") -> list[str]:
    return [f"{prefix}{i:02d}.test" for i in range(n)]


@pytest.mark.parametrize(("per_ip", "concurrency"), [(4, 64), (8, 3)])
async def test_robots_requests_keep_the_per_ip_cap_and_the_node_concurrency(
    tmp_path: Path, per_ip: int, concurrency: int
) -> None:
    hosts = _hosts(24)  # all on 127.0.0.1

    def routes(host: str, path: str) -> Answer:
        return (404, b"none") if path == "/robots.txt" else (200, page())

    config = config_for(tmp_path, hosts, RobotsConfig(), concurrency=concurrency)
    config = dataclasses.replace(config, politeness=dataclasses.replace(config.politeness, per_ip_connections=per_ip))
    async with RobotsWeb(routes, delay_s=lambda host, path: 0.2 if path == "/robots.txt" else 0.0) as web:
        summary = await asyncio.wait_for(run_crawl(config, [web.url(h) for h in hosts]), 60)
    assert summary["finished"] is True
    assert len(web.paths("/robots.txt")) == len(hosts) and len(web.paths("/")) == len(hosts) * 2
    assert web.most_at_once == min(per_ip, concurrency)


async def test_robots_redirects_to_one_hub_keep_the_hubs_clock(tmp_path: Path) -> None:
    hosts, gap_s = _hosts(8), 0.25

    def routes(host: str, path: str) -> Answer:
        if host != "hub.test" and path == "/robots.txt":
            return 301, web.url("hub.test", "/robots.txt").encode()
        return (200, b"User-agent: *\nAllow: /\n") if path == "/robots.txt" else (200, page())

    config = config_for(tmp_path, [*hosts, "hub.test"], RobotsConfig())
    config = dataclasses.replace(config, politeness=dataclasses.replace(config.politeness, min_delay_s=gap_s))
    async with RobotsWeb(routes) as web:
        summary = await asyncio.wait_for(run_crawl(config, [web.url(h) for h in hosts]), 60)
    assert summary["finished"] is True
    hub_at = [t for (h, _), t in zip(web.requests, web.times) if h == "hub.test"]
    assert len(hub_at) == len(hosts)
    gaps = [b - a for a, b in zip(hub_at, hub_at[1:])]
    assert min(gaps) >= gap_s * 0.9, gaps


async def test_a_robots_redirect_waits_the_delay_after_the_slow_answer_it_follows(tmp_path: Path) -> None:
    """The turn of a redirect's next hop counts from the end of the request it follows, as for any
    request (it counted from that request's start: a 0.3 s answer left 0.2 s of a 0.5 s delay)."""
    gap_s, answer_s = 0.5, 0.3

    def routes(host: str, path: str) -> Answer:
        if path == "/robots.txt":
            return 301, web.url(host, "/robots-alt.txt").encode()
        return (200, b"User-agent: *\nAllow: /\n") if path == "/robots-alt.txt" else (200, page())

    config = config_for(tmp_path, ["slow.test"], RobotsConfig())
    config = dataclasses.replace(config, politeness=dataclasses.replace(config.politeness, min_delay_s=gap_s))
    async with RobotsWeb(routes, delay_s=lambda host, path: answer_s if path == "/robots.txt" else 0.0) as web:
        summary = await asyncio.wait_for(run_crawl(config, [web.url("slow.test")]), 60)
    assert summary["finished"] is True
    at = dict((path, t) for (_, path), t in zip(web.requests, web.times))
    assert at["/robots-alt.txt"] - (at["/robots.txt"] + answer_s) >= gap_s * 0.9, at


async def test_a_dead_seed_ends_the_crawl_within_seconds_with_the_default_schedule(tmp_path: Path) -> None:
    seed = f"http://closed.test:{closed_port()}/"
    config = config_for(tmp_path, ["closed.test"], RobotsConfig())
    started = time.monotonic()
    summary = await asyncio.wait_for(run_crawl(config, [seed]), 60)
    took = time.monotonic() - started
    assert summary["finished"] is True
    assert took < 20, f"a closed port held the crawl {took:.1f} s"
    tries = [e for e in log_entries(tmp_path) if e.get("kind") == "robots"]
    assert [e["error"] for e in tries] == ["connect"] * 3


async def test_a_resumed_crawl_reuses_the_robots_rules_still_fresh(tmp_path: Path) -> None:
    hosts = _hosts(6)

    def routes(host: str, path: str) -> Answer:
        if path == "/robots.txt":
            return 200, b"User-agent: *\nDisallow: /private/\n"
        return 200, page("/a", "/b", "/private/c") if path == "/" else page()

    config = config_for(tmp_path, hosts, RobotsConfig())
    async with RobotsWeb(routes) as web:
        first = await asyncio.wait_for(run_crawl(dataclasses.replace(config, max_pages=7), [web.url(h) for h in hosts]), 60)
        asked_first = {h for h, p in web.paths("/robots.txt")}
        web.requests.clear()
        second = await asyncio.wait_for(run_crawl(config, []), 60)
    assert first["pages"] == 7 and second["finished"] is True
    asked_again = [h for h, p in web.paths("/robots.txt")]
    assert len(asked_first) >= 4, "the first run asked too few hosts: the test proves nothing"
    assert sorted(asked_again) == sorted(set(hosts) - asked_first), "rules within their TTL were asked for again"
    assert web.paths("/private/") == []
