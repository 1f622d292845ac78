"""``webgather crawl --continuous --cycle`` and ``webgather recrawl DIR`` from the command line."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from webgather.config import to_toml
from webgather.recrawl.state import state_path
from webgather.recrawl.state import UrlState
from webgather.testweb.server import TestWebServer

from recrawl_web import changing_web, recrawl_config


async def _run(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_continuous_crawl_then_one_more_cycle(tmp_path: Path) -> None:
    model = changing_web(n_hosts=2, mean_pages_per_host=8)
    out = tmp_path / "out"
    async with TestWebServer(model) as server:
        config_file = tmp_path / "crawl.toml"
        config_file.write_text(to_toml(recrawl_config(server, tmp_path)))
        code, stdout, stderr = await _run(
            "crawl", server.home_url(0), "--out", str(out), "--config", str(config_file), "--no-progress",
            "--continuous", "--cycle", "1s", "--max-cycles", "2", "--policy", "uniform",
        )
        assert code == 0, stderr
        assert "cycle 1 (uniform, budget none): done" in stdout and "cycle 2 (uniform" in stdout
        code, stdout, stderr = await _run("recrawl", str(out), "--config", str(config_file), "--budget", "3",
                                          "--cycle", "1s")
        assert code == 0, stderr
        assert "cycle 3 (optimal, budget 3): done" in stdout and "fetches 3:" in stdout
        code, _, stderr = await _run("recrawl", str(tmp_path / "missing"), "--config", str(config_file))
        assert code == 2 and "does not exist" in stderr and "seeds" not in stderr
    state = UrlState.open(state_path(out))
    try:
        last = state.last_cycle()
        assert last is not None and (last.id, last.status) == (3, "done")
        assert state.cycle_counts(2)["revisits"] == state.cycle_counts(1)["new_pages"]
    finally:
        state.close()
