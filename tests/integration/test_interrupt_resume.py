"""Ctrl-C behaves the same on one node and with --workers, and the runs of a crawl add up.

Ctrl-C (SIGINT) mid-crawl: the command prints its summary, says on its last line how to
resume, and exits 130; the same command then finishes the crawl, and ``summary.json``
counts every run (its ``pages`` equals the final fetches of the crawl log, ``runs`` lists both).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from webgather.config import to_toml
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, fetched_urls, final_entries, write_resolve

RESUME_LINE = "interrupted; run the same command to resume the crawl"


async def _crawl(seed: str, out: Path, config_file: Path, extra: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", "crawl", seed, "--out", str(out), "--config", str(config_file),
        "--no-progress", *extra, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


def _log_lines(out: Path) -> int:
    return sum(path.read_bytes().count(b"\n") for path in out.rglob("crawl.log.jsonl"))


@pytest.mark.parametrize("extra", [[], ["--workers", "2"]], ids=["one-node", "workers"])
async def test_ctrl_c_prints_the_summary_says_how_to_resume_and_the_runs_add_up(tmp_path: Path,
                                                                               extra: list[str]) -> None:
    model = WebModel(WebParams.for_tests())
    out = tmp_path / "out"
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.05)
        config = replace(config, fetch=replace(config.fetch, concurrency=4))
        config_file = tmp_path / "crawl.toml"
        config_file.write_text(to_toml(config))
        seed = server.home_url(0)
        proc = await _crawl(seed, out, config_file, extra)
        async with asyncio.timeout(60):
            while _log_lines(out) < 30 and proc.returncode is None:
                await asyncio.sleep(0.05)
        assert proc.returncode is None, "the crawl ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 130, stderr.decode()
        assert "finished: False" in stdout.decode()
        assert stderr.decode().strip().splitlines()[-1].endswith(RESUME_LINE)
        first = json.loads((out / "summary.json").read_text())
        assert first["finished"] is False and first["pages"] > 0
        again = await _crawl(seed, out, config_file, extra)
        stdout, stderr = await asyncio.wait_for(again.communicate(), 180)
        assert again.returncode == 0, stderr.decode()
        expected = crawl_outcomes(model, [seed], config, now_s=server.clock.wall())
    fetched = fetched_urls(final_entries(out))
    assert set(fetched) == set(expected.fetched)
    total = json.loads((out / "summary.json").read_text())
    assert total["finished"] is True
    assert total["pages"] == sum(fetched.values()), "summary.json must count the pages of every run"
    if not extra:
        assert [run["end"] for run in total["runs"]] == ["stopped", "done"]
        assert total["runs"][0]["pages"] + total["runs"][1]["pages"] == total["pages"]


async def test_max_pages_counts_the_whole_crawl_over_its_runs(tmp_path: Path) -> None:
    """--max-pages means the crawl's pages in all, as in a cluster: a resume continues the count."""
    from webgather.runtime.launch.crawl import run_crawl

    model = WebModel(WebParams.for_tests())
    out = tmp_path / "out"
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.01)
        seed = server.home_url(0)
        first = await run_crawl(replace(config, max_pages=20), [seed])
        again = await run_crawl(replace(config, max_pages=20), [seed])
        more = await run_crawl(replace(config, max_pages=35), [seed])
    assert first["pages"] == 20 and first["finished"] is False
    assert again["runs"][-1]["pages"] == 0 and again["pages"] == 20
    assert more["runs"][-1]["pages"] == 15 and more["pages"] == 35
    assert sum(fetched_urls(final_entries(out)).values()) <= 35


async def test_a_page_limit_leaves_one_node_and_workers_alike_unfinished(tmp_path: Path) -> None:
    """--max-pages that stops the crawl short: finished is False on one node and with --workers."""
    model = WebModel(WebParams.for_tests())
    async with TestWebServer(model) as server:
        for name, extra in (("one", []), ("workers", ["--workers", "2"])):
            out = tmp_path / name
            config = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.01)
            config_file = tmp_path / f"{name}.toml"
            config_file.write_text(to_toml(replace(config, max_pages=15)))
            proc = await _crawl(server.home_url(0), out, config_file, extra)
            stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
            summary = json.loads((out / "summary.json").read_text())
            assert summary["pages"] == 15 and summary["finished"] is False, (name, stdout.decode(), stderr.decode())
            assert proc.returncode == 0, (name, stderr.decode())  # the limit was reached: not a failure
