"""``webgather recrawl DIR`` over a plain crawl, killed with -9 mid-cycle and run again."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import signal
import sys
from pathlib import Path

from webgather.config import to_toml
from webgather.recrawl.state import state_path
from webgather.recrawl.state import UrlState
from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import verify_warcs
from recrawl_web import changing_web, recrawl_config

sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "recrawl"))
from recrawl_records import check_revisits_point_at_latest_originals, warc_records  # noqa: E402

KILLS = 3
CONCURRENCY = 4


async def _recrawl(out: Path, config_file: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", "recrawl", str(out), "--config", str(config_file), "--no-progress",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )


def _page_fetches(out: Path) -> int:
    return sum(1 for e in read_crawl_log(out / "crawl.log.jsonl")
               if e.get("kind") == "page" and not e.get("retry") and e.get("status") is not None)


async def test_recrawl_of_a_plain_crawl_resumes_after_kill_9(tmp_path: Path) -> None:
    model = changing_web(mean_pages_per_host=25, dying_share=0.0)
    rng = random.Random(20261122)
    out = tmp_path / "out"
    async with TestWebServer(model) as server:
        config = recrawl_config(server, tmp_path, cycle_s=1.0, policy="uniform")
        config = dataclasses.replace(config, fetch=dataclasses.replace(config.fetch, concurrency=CONCURRENCY),
                                     politeness=dataclasses.replace(config.politeness, min_delay_s=0.1))
        await run_crawl(config, [server.home_url(0)])  # no re-crawl state: the first recrawl imports it
        first = _page_fetches(out)
        config_file = tmp_path / "crawl.toml"
        config_file.write_text(to_toml(config))
        for _ in range(KILLS):
            proc = await _recrawl(out, config_file)
            await asyncio.sleep(rng.uniform(1.0, 2.5))
            if proc.returncode is None:
                os.kill(proc.pid, signal.SIGKILL)
            await proc.wait()
        proc = await _recrawl(out, config_file)
        _, stderr = await asyncio.wait_for(proc.communicate(), timeout=120)
        assert proc.returncode == 0, stderr.decode()
    state = UrlState.open(state_path(out))
    try:
        last = state.last_cycle()
        assert last is not None and last.status == "done"
        records = list(state.records())
        assert len(records) == state.cycle_counts(0)["imported"] > 20
        assert all(r.visits >= 2 and r.pending_cycle is None for r in records), "a page was not revisited"
        planned = sum(state.cycle_counts(c).get("revisits", 0) for c in range(1, last.id + 1))
    finally:
        state.close()
    revisit_fetches = _page_fetches(out) - first
    print(f"cycles {last.id}, revisit fetches {revisit_fetches}, recorded {planned}")
    assert revisit_fetches - planned <= KILLS * CONCURRENCY
    assert check_revisits_point_at_latest_originals(warc_records(out)) > 0
    assert verify_warcs(out) > 0
