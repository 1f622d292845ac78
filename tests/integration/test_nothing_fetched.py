"""A crawl that fetched nothing at all exits 5 (``ExitCode.NOTHING_FETCHED``) with one line, on one node
and with workers alike, and prints no figure it could not compute ("None ms")."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from robots_web import closed_port

SHORT_RETRIES = "[robots]\nerror_retry_s = 0.2\nretry_factor = 1.0\nmax_tries = 2\n"
"""The robots.txt retry schedule of a dead host, shortened: the test is about the exit, not the wait."""


@pytest.mark.parametrize("cluster", [[], ["--workers", "2"]])
async def test_a_crawl_of_a_dead_seed_exits_5_with_one_line(tmp_path: Path, cluster: list[str]) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SHORT_RETRIES)
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", "crawl", f"http://127.0.0.1:{closed_port()}/", "--out", str(tmp_path / "out"),
        "--config", str(config), "--allow-address", "127.0.0.0/8", "--no-progress", *cluster,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    stdout, stderr = out.decode(), err.decode()
    assert proc.returncode == 5, stdout + stderr
    lines = [line for line in stderr.splitlines() if line.startswith("webgather:")]
    assert lines == ["webgather: nothing fetched: no request got an answer (robots_unavailable 1)"], stderr
    assert "None" not in stdout
    assert time.monotonic() - started < 60
