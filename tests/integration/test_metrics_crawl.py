"""``--metrics``: a node's Prometheus endpoint, scraped during and after crawls of the synthetic web on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from webgather.config import ClusterConfig, to_toml
from webgather.runtime.launch.crawl import run_crawl
from webgather.runtime.metrics.node import serve_metrics
from webgather.runtime.engine.node import CrawlNode
from webgather.runtime.engine.parts import open_parts
from webgather.runtime.engine.stats import FETCH_SECONDS_BUCKETS
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from metrics_helpers import free_port, labelled, metrics_threads, port_is_free, scrape, scrape_while
from node_crawl_helpers import crawl_config, write_resolve


@pytest.fixture(scope="module")
def model() -> WebModel:
    return WebModel(WebParams.for_tests())


async def test_a_scrape_at_the_end_of_a_crawl_equals_the_nodes_counters(model: WebModel, tmp_path: Path) -> None:
    port = free_port()
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path))
        seeds = [server.home_url(0)]
        async with open_parts(config, tmp_path / "out", seeds=seeds) as parts:
            node = CrawlNode(parts)
            node.add_seeds(seeds)
            async with serve_metrics(f"127.0.0.1:{port}", parts):
                await node.run()
                end = await asyncio.to_thread(scrape, port)
            stats = parts.stats
    assert end["webgather_node_info{node=n0}"] == 1
    assert end["webgather_pages_total"] == stats.pages > 100
    assert labelled(end, "webgather_page_status_total") == {str(k): v for k, v in stats.status.items()}
    assert labelled(end, "webgather_page_errors_total") == dict(stats.errors)
    assert end["webgather_received_bytes_total"] == stats.bytes_received
    assert end["webgather_fetch_attempts_total"] == end["webgather_fetch_duration_seconds_count"] == stats.attempts
    buckets = [end[f"webgather_fetch_duration_seconds_bucket{{le={b}}}"] for b in [*FETCH_SECONDS_BUCKETS, "+Inf"]]
    assert buckets == sorted(buckets) and buckets[-1] == stats.attempts
    assert end["webgather_fetch_duration_seconds_sum"] == pytest.approx(stats.fetch_seconds_sum)
    assert end["webgather_queued_urls"] == end["webgather_hosts_with_work"] == end["webgather_hosts_active"] == 0
    assert end["webgather_hosts"] == model.params.n_hosts
    robots = labelled(end, "webgather_robots_hosts")
    assert robots["allowed"] > 0 and robots["fetching"] == 0 and sum(robots.values()) >= model.params.n_hosts - 1
    assert end["process_cpu_seconds_total"] > 0
    assert port_is_free(port) and metrics_threads() == []


async def test_run_crawl_serves_metrics_during_the_crawl_and_stops_at_its_end(model: WebModel,
                                                                             tmp_path: Path) -> None:
    port = free_port()
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path),
                              min_delay_s=0.02)
        config = dataclasses.replace(config, metrics=str(port))  # a bare port: 127.0.0.1
        crawl = asyncio.create_task(run_crawl(config, [server.home_url(0)]))
        scrapes = await scrape_while(port, lambda: not crawl.done())
        summary = await crawl
    pages = [s["webgather_pages_total"] for s in scrapes]
    assert pages == sorted(pages), "a counter went down"
    assert any(0 < n < summary["pages"] for n in pages), pages  # seen during the crawl
    assert pages[-1] <= summary["pages"]
    assert any(s["webgather_queued_urls"] > 0 and s["webgather_hosts_with_work"] > 0 for s in scrapes)
    assert port_is_free(port) and metrics_threads() == []


async def _cli(*args: str, env: dict[str, str] | None = None, timeout_s: float = 60.0) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=timeout_s)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _config_file(model: WebModel, server: TestWebServer, tmp_path: Path, min_delay_s: float) -> Path:
    """The test web's crawl settings (quick robots retries, short timeouts) as a TOML file for the CLI."""
    config = crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path),
                          min_delay_s=min_delay_s)
    config = dataclasses.replace(config, cluster=ClusterConfig(n_buckets=64, heartbeat_s=0.1, member_ttl_s=2.0))
    (tmp_path / "crawl.toml").write_text(to_toml(config))
    return tmp_path / "crawl.toml"


async def test_webgather_crawl_metrics_from_the_command_line(model: WebModel, tmp_path: Path) -> None:
    port = free_port()
    async with TestWebServer(model) as server:
        config_file = _config_file(model, server, tmp_path, min_delay_s=0.02)
        crawl = asyncio.create_task(_cli("crawl", server.home_url(0), "--config", str(config_file),
                                         "--metrics", f"127.0.0.1:{port}"))
        scrapes = await scrape_while(port, lambda: not crawl.done())
        code, _, stderr = await crawl
    assert code == 0, stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    pages = [s["webgather_pages_total"] for s in scrapes]
    assert pages and pages == sorted(pages) and 0 < pages[-1] <= summary["pages"], pages
    assert port_is_free(port)


@pytest.mark.parametrize("value", ["99999", "localhost:9100", "127.0.0.1:", "9100:127.0.0.1", "[127.0.0.1]:80"])
async def test_a_bad_metrics_address_is_refused_in_one_line(value: str, tmp_path: Path) -> None:
    code, out, err = await _cli("crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "out"), "--metrics", value)
    assert code == 2 and "--metrics" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


async def test_a_bad_metrics_setting_from_the_environment_is_refused_in_one_line(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "WEBGATHER_METRICS": "localhost:9100"}
    code, _, err = await _cli("crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "out"), env=env)
    assert code == 2 and err.strip().count("\n") == 0 and "metrics must be PORT or ADDR:PORT" in err, err


async def test_a_metrics_port_in_use_is_a_one_line_error(model: WebModel, tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with TestWebServer(model) as server:
            code, _, err = await _cli(
                "crawl", server.home_url(0), "--out", str(tmp_path / "out"), "--no-progress",
                "--resolve", str(write_resolve(server, tmp_path)), "--allow-address", "127.0.0.0/8",
                "--metrics", f"127.0.0.1:{port}")
    assert code == 2 and f"cannot serve metrics on 127.0.0.1:{port}" in err and "Traceback" not in err, err
    assert err.strip().count("\n") == 0, err


@pytest.mark.slow
async def test_each_worker_serves_its_metrics_on_port_plus_k(model: WebModel, tmp_path: Path) -> None:
    base = free_port()
    while not port_is_free(base + 1):
        base = free_port()
    async with TestWebServer(model) as server:
        config_file = _config_file(model, server, tmp_path, min_delay_s=0.1)
        crawl = asyncio.create_task(_cli("crawl", server.home_url(0), "--config", str(config_file),
                                         "--workers", "2", "--metrics", str(base), timeout_s=120))
        scrapes = await asyncio.gather(*(scrape_while(port, lambda: not crawl.done()) for port in (base, base + 1)))
        code, stdout, stderr = await crawl
    assert code == 0, stdout + stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    for k, port in enumerate((base, base + 1)):
        assert scrapes[k], f"worker w{k} on port {port} was never scraped"
        last = scrapes[k][-1]
        assert last[f"webgather_node_info{{node=w{k}}}"] == 1
        assert 0 < last["webgather_pages_total"] <= summary["nodes"][f"w{k}"]["pages"]
        assert last["webgather_buckets_owned"] > 0
        assert port_is_free(port)


async def test_a_recrawl_cycle_serves_its_counters(tmp_path: Path) -> None:
    from recrawl_web import HOUR, T0, JumpClock, changing_web, recrawl_config

    from webgather.runtime.launch.crawl import run_cycle

    port = free_port()
    clock = JumpClock(T0 + 60)
    async with TestWebServer(changing_web(), clock=clock) as server:
        config = recrawl_config(server, tmp_path)
        config = dataclasses.replace(config, metrics=f"127.0.0.1:{port}",
                                     politeness=dataclasses.replace(config.politeness, min_delay_s=0.05))
        await run_cycle(config, [server.home_url(0)], clock=clock)
        clock.advance(HOUR)
        cycle = asyncio.create_task(run_cycle(config, clock=clock))
        scrapes = await scrape_while(port, lambda: not cycle.done())
        summary = await cycle
    counts = summary["recrawl"]["counts"]
    during = [s for s in scrapes if s.get("webgather_recrawl_events_total{event=fetches}", 0) > 0]
    assert during, "no scrape saw the cycle's fetches"
    assert all(s["webgather_recrawl_cycle"] == 2 for s in during)
    last = during[-1]
    assert last["webgather_recrawl_events_total{event=fetches}"] <= counts["fetches"]
    assert last.get("webgather_recrawl_events_total{event=revisits}", 0) <= counts["revisits"]
    assert port_is_free(port)
