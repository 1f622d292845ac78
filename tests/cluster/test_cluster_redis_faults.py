"""Redis faults a node must not meet in silence: the crawl's data lost (FLUSHALL, a restart without
persistence), and a black-holed link (connections accepted, nothing forwarded).

Each test runs ``webgather crawl SEEDS --redis URL --crawl NAME`` (this process is the crawl's one
node) as a child process against the synthetic web served by this test's event loop, with the
redis-server of ``test_cluster_redis_outage``'s fixture. Everything started here is ended by PID.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
import redis as redis_sync
from blackhole_proxy import BlackHoleProxy
from cluster_crawl_helpers import small_web
from cluster_process_helpers import final_fetches, finish, start_webgather
from test_cluster_redis_outage import CRAWL, _node_logs, _setup, _wait_pages, redis_server  # noqa: F401

from webgather.cluster.embedded import EmbeddedRedis
from webgather.exitcodes import ExitCode
from webgather.testweb import TestWebServer, WebModel


def _flushall(url: str) -> None:
    client = redis_sync.Redis.from_url(url)
    try:
        client.flushall()
    finally:
        client.close()


def _restart_empty(server: EmbeddedRedis) -> None:
    """A restart without persistence: killed, its data gone, started again on the same port."""
    server.kill()
    for path in server.directory.iterdir():
        if path.name.startswith(("appendonly", "dump")):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    server.start()


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("webgather: error:")]


@pytest.mark.parametrize("fault", ["flushall", "restart_empty"])
async def test_redis_that_lost_the_crawls_data_stops_the_node_loudly(tmp_path: Path, redis_server: EmbeddedRedis,
                                                                     fault: str) -> None:
    """Before: one line "backend back after 2 s; resuming" (or nothing at all after a FLUSHALL), the end
    of the crawl never seen (its counters were gone), the node idle until killed. Now: the settings key
    every node registered is the crawl's marker; gone, the node stops at its next beat with one line
    and exit 6 (CannotContinue), keeping its state."""
    params = small_web(n_hosts=24)
    out = tmp_path / "crawl"
    async with TestWebServer(WebModel(params)) as srv:
        args, expect, _ = await _setup(tmp_path, srv, params, max_outage_s=30.0)
        proc = await start_webgather("crawl", *args, "--redis", redis_server.url, "--crawl", CRAWL)
        try:
            await _wait_pages(out, len(expect) // 4, proc)
            if fault == "flushall":
                await asyncio.to_thread(_flushall, redis_server.url)
            else:
                await asyncio.to_thread(_restart_empty, redis_server)
            at = final_fetches(out)
        finally:
            code, output = await finish(proc, 40.0)
    print(output)
    assert at < len(expect), "the crawl ended before the fault"
    assert code == ExitCode.CANNOT_CONTINUE, output
    (line,) = _error_lines(output)
    assert "lost the data of crawl 'outage'" in line and "kept its state" in line, line
    assert (out / "nodes").is_dir() and list(out.glob("nodes/*/crawl.log.jsonl"))  # its state is kept


async def test_a_black_holed_redis_link_is_an_outage_with_its_limit_enforced_while_it_lasts(
        tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    """Before: the first line ~30 s after the cut (three socket timeouts of 10 s), ``max_outage_s`` never
    enforced while the link was dead, "back after 91.3 s" after the heal and then exit 2. Now: the outage
    counts from the last answer, silence itself begins it, and the node stops within the limit (exit 6)."""
    params = small_web(n_hosts=24)
    out = tmp_path / "crawl"
    limit_s = 3.0
    async with TestWebServer(WebModel(params)) as srv, BlackHoleProxy(redis_server.port) as proxy:
        args, expect, _ = await _setup(tmp_path, srv, params, max_outage_s=limit_s)
        proc = await start_webgather("crawl", *args, "--redis", proxy.url, "--crawl", CRAWL)
        try:
            await _wait_pages(out, len(expect) // 4, proc)
            proxy.black_hole()
            cut = time.monotonic()
            try:
                async with asyncio.timeout(limit_s + 12.0):  # the limit, plus the node's orderly stop
                    await proc.wait()
            except TimeoutError:
                pass
            stopped_s = time.monotonic() - cut
            proxy.heal()
        finally:
            code, output = await finish(proc, 40.0)
    print(output, f"stopped {stopped_s:.1f} s after the cut")
    assert stopped_s < limit_s + 12.0, f"the node was still up {stopped_s:.1f} s into the cut"
    assert code == ExitCode.CANNOT_CONTINUE, output
    (line,) = _error_lines(output)
    assert f"backend unavailable for more than {limit_s:g} s" in line and "run the same command again" in line
    assert "backend back after" not in output
