"""``webgather recrawl DIR`` on the directory of a ``crawl --workers 2`` crawl, and the flags refused."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

from webgather.config import ClusterConfig, to_toml
from webgather.recrawl.state import state_path
from webgather.recrawl.state import UrlState
from webgather.testweb.server import TestWebServer

from recrawl_web import changing_web, recrawl_config, split_server


async def _run(*args: str, timeout_s: float = 60.0) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=timeout_s)
    finally:
        if proc.returncode is None:
            proc.kill()  # its workers end when their Redis goes (the embedded one is its child)
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _urls(node_dir: Path) -> int:
    state = UrlState.open(state_path(node_dir))
    try:
        return state.totals()["urls"]
    finally:
        state.close()


def _config_file(server: TestWebServer, tmp_path: Path) -> Path:
    """The re-crawl test web's config for a two-worker crawl (M = 64, quick heartbeats), as TOML."""
    config = recrawl_config(server, tmp_path)
    config = dataclasses.replace(config, cluster=ClusterConfig(n_buckets=64, heartbeat_s=0.1, member_ttl_s=2.0))
    config_file = tmp_path / "crawl.toml"
    config_file.write_text(to_toml(config))
    return config_file


async def test_recrawl_dir_of_a_two_worker_crawl_revisits_every_page_with_two_workers(tmp_path: Path) -> None:
    model = changing_web(n_hosts=6, mean_pages_per_host=5, change_mix=((None, 1.0),), dying_share=0.0)
    out = tmp_path / "out"
    async with split_server(model, None, ["w0", "w1"], 2, 64) as server:  # both workers get pages
        config_file = _config_file(server, tmp_path)
        code, _, stderr = await _run("crawl", server.home_url(0), "--out", str(out), "--config", str(config_file),
                                     "--no-progress", "--workers", "2")
        assert code == 0, stderr
        pages = json.loads((out / "summary.json").read_text())["pages"]
        code, stdout, stderr = await _run("recrawl", str(out), "--policy", "uniform", "--cycle", "1h")
        assert code == 0, stdout + stderr
    assert "cycle 1 (uniform, budget none): done" in stdout
    summary = json.loads((out / "summary.json").read_text())
    recrawl = summary["recrawl"]
    assert set(summary["nodes"]) == {"w0", "w1"} and summary["finished"]
    assert recrawl["imported"] == pages, "each worker imported its own crawl log"
    assert recrawl["counts"]["revisits"] == recrawl["planned_revisits"] == pages
    counts = recrawl["counts"]  # pages answer 304; the sitemap has no validators: same digest
    assert counts["not_modified"] + counts.get("same_digest", 0) == pages and counts.get("new_pages", 0) == 0
    assert counts["not_modified"] >= pages - 2
    assert _urls(out / "nodes" / "w0") + _urls(out / "nodes" / "w1") == pages
    assert all(n["pages"] > 0 for n in summary["nodes"].values())


async def test_flags_that_would_be_ignored_are_refused(tmp_path: Path) -> None:
    code, _, stderr = await _run("crawl", "http://h0000.web.test/", "--out", str(tmp_path / "a"), "--budget", "5")
    assert code == 2 and "--budget only apply to re-crawl cycles" in stderr
    code, _, stderr = await _run("crawl", "http://h0000.web.test/", "--out", str(tmp_path / "a"), "--redis",
                                 "redis://127.0.0.1:1/0", "--crawl", "x", "--continuous")
    assert code == 2 and "--continuous with --redis needs --workers" in stderr
    code, _, stderr = await _run("crawl", "http://h0000.web.test/", "--out", str(tmp_path / "a"), "--continuous",
                                 "--max-pages", "3")
    assert code == 2 and "--max-pages does not apply to --continuous" in stderr
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "seeds.txt").write_text("http://h0000.web.test/\n")  # a one-node crawl's (an empty DIR holds none)
    code, _, stderr = await _run("recrawl", str(tmp_path / "one"), "--workers", "2")
    assert code == 2 and "one-node crawl" in stderr


async def test_recrawl_and_continuous_cycles_of_a_crawl_made_with_max_pages(tmp_path: Path) -> None:
    """``--max-pages`` is part of the crawl's definition (crawl-wide) and limits the crawl only: a cycle
    on its directory is not refused as "other settings" and is not held at the spent page permits."""
    model = changing_web(n_hosts=6, mean_pages_per_host=5, change_mix=((None, 1.0),), dying_share=0.0)
    out = tmp_path / "out"
    async with TestWebServer(model) as server:
        config_file = _config_file(server, tmp_path)
        code, _, stderr = await _run("crawl", server.home_url(0), "--out", str(out), "--config", str(config_file),
                                     "--no-progress", "--workers", "2", "--max-pages", "12")
        assert code == 0, stderr
        assert json.loads((out / "summary.json").read_text())["pages"] == 12
        code, stdout, stderr = await _run("recrawl", str(out), "--policy", "uniform", "--cycle", "1h")
        assert code == 0, stdout + stderr
        first = json.loads((out / "summary.json").read_text())["recrawl"]
        code, stdout2, stderr = await _run("crawl", server.home_url(0), "--out", str(out), "--config",
                                           str(config_file), "--no-progress", "--workers", "2", "--continuous",
                                           "--policy", "uniform", "--cycle", "1h", "--max-cycles", "1")
        assert code == 0, stdout2 + stderr
    assert "cycle 1 (uniform, budget none): done" in stdout and "cycle 2 (uniform" in stdout2
    assert first["imported"] == first["planned_revisits"] == first["counts"]["revisits"] == 12
    assert first["counts"].get("new_pages", 0) > 0, "the crawl's unfetched frontier is fetched in the cycle"
    second = json.loads((out / "summary.json").read_text())["recrawl"]
    assert second["cycle"] == 2 and second["cycle_done"] and second["counts"]["revisits"] > 12
