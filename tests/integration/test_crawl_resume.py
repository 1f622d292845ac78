"""kill -9 at random moments, restart with the same command: nothing lost, archive whole."""

from __future__ import annotations

import asyncio
import os
import random
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

from node_crawl_helpers import crawl_config, fetched_urls, final_entries, verify_warcs, write_resolve

KILLS = 4
CONCURRENCY = 8


async def _crawl_process(seed: str, out: Path, config_file: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", "crawl", seed, "--out", str(out),
        "--config", str(config_file), "--no-progress",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )


@pytest.mark.parametrize("order", ["bfs", "opic"])
async def test_kill_9_and_resume_loses_nothing(tmp_path: Path, order: str) -> None:
    model = WebModel(WebParams.for_tests())
    rng = random.Random(20261122)
    out = tmp_path / "out"
    async with TestWebServer(model) as server:
        config = crawl_config(
            crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.03,
        )
        config = replace(config, fetch=replace(config.fetch, concurrency=CONCURRENCY),
                         frontier=replace(config.frontier, order=order))
        config_file = tmp_path / "crawl.toml"
        config_file.write_text(to_toml(config))
        seed = server.home_url(0)
        for _ in range(KILLS):
            proc = await _crawl_process(seed, out, config_file)
            await asyncio.sleep(rng.uniform(0.8, 2.5))
            if proc.returncode is None:
                os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
        proc = await _crawl_process(seed, out, config_file)
        _, stderr = await asyncio.wait_for(proc.communicate(), timeout=180)
        assert proc.returncode == 0, stderr.decode()
        expected = crawl_outcomes(model, [seed], config, now_s=server.clock.wall())
    fetched = fetched_urls(final_entries(out))
    assert set(fetched) == set(expected.fetched)
    repeats = sum(n - 1 for n in fetched.values())
    print(f"kills {KILLS}, repeated fetches {repeats}")
    assert repeats <= KILLS * CONCURRENCY, f"{repeats} repeated fetches for {KILLS} kills"
    assert verify_warcs(out) > 0
