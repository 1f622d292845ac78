"""The status page of a ``--workers`` crawl after the crawl has ended: its last state, not "cannot reach Redis".

The crawl (``webgather crawl --workers 2`` as a child process tree, the synthetic web served by this
test's loop) stops its embedded Redis when it ends; the status reader, pointed at the crawl's
``unix://OUT/redis/redis.sock`` as the README says, then shows the summaries the crawl left.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import kill_tree

from webgather.cluster.status_model import build_status
from webgather.errors import BackendUnavailable
from webgather.runtime.metrics.status_server import StatusReader, StatusServer, embedded_crawl_dir, open_reader
from webgather.store.summary import write_summary
from webgather.testweb import TestWebServer, WebModel


async def _crawl_with_workers(tmp_path: Path) -> Path:
    params = small_web()
    out = tmp_path / "crawl"
    async with TestWebServer(WebModel(params)) as srv:
        resolve = srv.write_resolve_file(tmp_path / "resolve.txt")
        toml = write_toml(cluster_config(params, out, resolve), tmp_path / "crawl.toml")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webgather", "crawl", srv.home_url(0), "--out", str(out), "--config", str(toml),
            "--no-progress", "--workers", "2", stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            async with asyncio.timeout(90):
                assert await proc.wait() == 0
        finally:
            if proc.returncode is None:
                kill_tree(proc.pid)
                await proc.wait()
    return out


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_the_page_of_an_ended_workers_crawl_shows_its_last_state(tmp_path: Path) -> None:
    out = await _crawl_with_workers(tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    url = f"unix://{out}/redis/redis.sock"
    assert embedded_crawl_dir(url) == out and embedded_crawl_dir("redis://127.0.0.1:6379") is None
    reader = await open_reader(url, "crawl")  # the embedded Redis is gone: the summaries stand in
    try:
        async with StatusServer(reader, "127.0.0.1", 0, 5.0) as server:
            code, text = await _get(server.url + "status.json")
            assert code == 200
            status = json.loads(text)
            code, page = await _get(server.url)
    finally:
        await reader.aclose()
    assert status["finished"] is True and status["pages"] == summary["pages"] > 0
    assert {n["node"]: n["pages"] for n in status["nodes"]} == {n: f["pages"] for n, f in summary["nodes"].items()}
    assert all(n["state"] == "ended: done" and not n["alive"] for n in status["nodes"])
    assert sum(p["pages_per_s"] for p in status["history"]) * status["interval_s"] == summary["pages"]
    assert status["ended"] == str(out / "summary.json")
    assert code == 200 and "the crawl has ended" in page and "cannot reach" not in page


class _GoneRedis:
    """A backend whose Redis has stopped: every read fails as a stopped server's would."""

    def coordinator(self) -> _GoneRedis:
        return self

    async def members(self) -> dict[str, Any]:
        raise BackendUnavailable("Redis at unix:///x/redis/redis.sock does not answer")

    async def aclose(self) -> None:
        return None


async def test_a_summary_older_than_the_crawl_last_seen_running_does_not_stand_in(tmp_path: Path) -> None:
    write_summary(tmp_path, {"pages": 7, "finished": True, "errors": {}})
    reader = StatusReader(_GoneRedis(), "c", crawl_dir=tmp_path)  # type: ignore[arg-type]
    assert (await reader.read()).pages == 7  # written after anything this reader saw: the crawl's last state
    reader._live_at = time.time() + 60  # the crawl was seen running after that summary (a previous run's)
    try:
        await reader.read()
    except BackendUnavailable as exc:
        assert "does not answer" in str(exc)
    else:
        raise AssertionError("a previous run's summary was shown as the crawl's last state")
    assert build_status("c", {}, None, {}, 0.0).ended == ""
