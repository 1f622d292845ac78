"""A Redis that goes away mid-crawl: the nodes pause and resume, or give up after ``max_outage_s``;
the embedded Redis of ``--workers`` is restarted by the parent.

The first two tests start their own redis-server (TCP on loopback, a fixed port kept across
restarts) and runs ``webgather crawl --workers 2 --redis URL`` as a child
process tree against the synthetic web served by this test's event loop.
Everything started here is ended by PID.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, small_web, write_toml
from cluster_process_helpers import children, final_fetches, finish, start_webgather

from process_helpers import own_redis_servers
from webgather.cluster.embedded import EmbeddedRedis
from webgather.exitcodes import ExitCode
from webgather.testweb import TestWebServer, WebModel, closure, max_in_flight

M = 64
CRAWL = "outage"


@pytest.fixture
async def redis_server(tmp_path: Path) -> AsyncIterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path / "redis", tcp=True, appendfsync="always")
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)
    assert own_redis_servers() == []


async def _wait_pages(out: Path, n: int, proc: asyncio.subprocess.Process) -> None:
    async with asyncio.timeout(30):
        while final_fetches(out) < n:
            assert proc.returncode is None, "the crawl ended before the outage"
            await asyncio.sleep(0.05)


def _node_logs(out: Path) -> dict[str, str]:
    return {p.parent.name: p.read_text(errors="replace") for p in sorted(out.glob("nodes/*/node.log"))}


async def _setup(tmp_path: Path, srv: TestWebServer, params: Any, **cluster: Any) -> tuple[list[str], set[str], int]:
    config = cluster_config(params, tmp_path / "crawl", srv.write_resolve_file(tmp_path / "resolve.txt"),
                            n_buckets=M, min_delay_s=0.05, **cluster)
    seeds = [srv.home_url(0), srv.home_url(3)]
    toml = write_toml(config, tmp_path / "crawl.toml")
    args = [*seeds, "--out", str(tmp_path / "crawl"), "--config", str(toml), "--no-progress"]
    return args, closure(srv.model, seeds, config), config.fetch.concurrency


async def test_redis_killed_mid_crawl_and_restarted_loses_nothing(tmp_path: Path,
                                                                   redis_server: EmbeddedRedis) -> None:
    params = small_web(n_hosts=24)
    out = tmp_path / "crawl"
    async with TestWebServer(WebModel(params)) as srv:
        args, expect, concurrency = await _setup(tmp_path, srv, params, max_outage_s=30.0)
        proc = await start_webgather("crawl", *args, "--workers", "2", "--redis", redis_server.url, "--crawl", CRAWL)
        try:
            await _wait_pages(out, len(expect) // 4, proc)
            await asyncio.to_thread(redis_server.kill)
            killed_at = final_fetches(out)
            await asyncio.sleep(3.0)
            await asyncio.to_thread(redis_server.start)  # same port, data from its AOF
        finally:
            code, output = await finish(proc, 60.0)
        records = list(srv.records)
    print(output)
    assert code == 0, output
    assert killed_at < len(expect), "the crawl ended before Redis went away"
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == expect
    assert duplicates(entries) == {}
    assert max(max_in_flight(records, lambda r: r.host).values()) == 1
    for node, log in _node_logs(out).items():  # one line when it goes, one when it is back
        assert log.count("backend unavailable (") == 1, (node, log)
        assert log.count("backend back after") == 1, (node, log)


async def test_redis_away_longer_than_the_bound_stops_the_nodes_and_the_command_resumes(
        tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    params = small_web(n_hosts=24)
    out = tmp_path / "crawl"
    async with TestWebServer(WebModel(params)) as srv:
        args, expect, concurrency = await _setup(tmp_path, srv, params, max_outage_s=1.5)
        command = ["crawl", *args, "--workers", "2", "--redis", redis_server.url, "--crawl", CRAWL]
        proc = await start_webgather(*command)
        try:
            await _wait_pages(out, len(expect) // 4, proc)
            await asyncio.to_thread(redis_server.kill)
        finally:
            code, output = await finish(proc, 30.0)
        print(output)
        # a worker's own reason to stop is the command's: exit 6 (could not go on), not 1 (did not end)
        assert code == ExitCode.CANNOT_CONTINUE and "finished: False" in output and "cannot reach Redis" in output
        for node, log in _node_logs(out).items():
            assert "backend unavailable for more than 1.5 s" in log and "run the same command again" in log, node
        stopped_at = len(fetch_entries(out))
        assert stopped_at < len(expect)
        await asyncio.to_thread(redis_server.start)
        code, output = await finish(await start_webgather(*command), 60.0)
    print(output)
    assert code == 0, output
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == expect
    # a resume fetches again at most the pages that were in flight when the nodes stopped
    assert sum(n - 1 for n in duplicates(entries).values()) <= 2 * concurrency


def _embedded_redis_pid(parent: int) -> int | None:
    for pid in children(parent):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")  # not cmdline: redis-server rewrites its title
        except OSError:
            continue
        if exe.endswith("redis-server"):
            return pid
    return None


async def test_the_embedded_redis_of_workers_is_restarted_after_a_crash_and_nothing_is_lost(tmp_path: Path) -> None:
    params = small_web(n_hosts=24)
    out = tmp_path / "crawl"
    async with TestWebServer(WebModel(params)) as srv:
        args, expect, concurrency = await _setup(tmp_path, srv, params, max_outage_s=30.0)
        proc = await start_webgather("crawl", *args, "--workers", "2")
        try:
            await _wait_pages(out, len(expect) // 3, proc)
            pid = _embedded_redis_pid(proc.pid)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)  # the crash: appendfsync always kept every acknowledged write
        finally:
            code, output = await finish(proc, 60.0)
        records = list(srv.records)
    print(output)
    assert code == 0, output
    assert "the embedded Redis exited; restarting it" in output
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == expect
    assert duplicates(entries) == {}
    assert max(max_in_flight(records, lambda r: r.host).values()) == 1
