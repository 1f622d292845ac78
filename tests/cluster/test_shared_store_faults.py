"""A shared store that stops taking writes (full, or read-only) mid-crawl: the nodes retry for
``max_outage_s`` from the store's last write that worked, then each says so in one line and exits 6
(CannotContinue), keeping its state; no node idles until someone kills it.

Two node processes with separate --out directories (``crawl --redis`` and ``node --redis``), one
redis-server (``test_cluster_redis_outage``'s fixture) and a ``file://`` store. The store is broken by
putting a file where its ``warc/``, ``cdxj/`` and ``checkpoints/`` directories were: every put fails
with an OSError, as on a full or read-only file system (root, as the tests may run, ignores modes).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import finish, start_webgather
from test_cluster_redis_outage import CRAWL, redis_server  # noqa: F401

from webgather.cluster.embedded import EmbeddedRedis
from webgather.exitcodes import ExitCode
from webgather.testweb import TestWebServer, WebModel, closure


def _break_store(shared: Path) -> None:
    """Every put now fails: the directories puts go to are files."""
    for name in ("warc", "cdxj", "checkpoints"):
        path = shared / name
        if path.exists():
            path.rename(shared / f"{name}.before")
        path.write_text("not a directory\n")


async def _wait_for(check: object, timeout_s: float) -> None:
    async with asyncio.timeout(timeout_s):
        while not check():  # type: ignore[operator]
            await asyncio.sleep(0.05)


async def test_a_store_that_takes_no_writes_stops_every_node_with_one_line_within_the_limit(
        tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    """Before: a hand-off waited forever on the store (74 retries in 5 minutes) and idle nodes whose
    acks waited for a checkpoint never saw the crawl's end, until SIGTERM (then exit 2)."""
    params = small_web(n_hosts=24)
    shared, limit_s = tmp_path / "shared", 3.0
    async with TestWebServer(WebModel(params)) as srv:
        config = cluster_config(params, tmp_path / "cfg", srv.write_resolve_file(tmp_path / "resolve.txt"),
                                min_delay_s=0.1, checkpoint_s=0.5, max_outage_s=limit_s)
        toml = write_toml(config, tmp_path / "crawl.toml")
        seeds = [srv.home_url(0), srv.home_url(3)]
        expect = closure(srv.model, seeds, config)
        common = ["--redis", redis_server.url, "--crawl", CRAWL, "--no-progress"]
        a = await start_webgather("crawl", *seeds, "--out", str(tmp_path / "out-a"), "--config", str(toml),
                                  "--shared-store", shared.as_uri(), "--node-id", "a", *common)
        procs = [a]
        try:
            await _wait_for(lambda: (shared / "crawl.json").exists(), 30.0)
            procs.append(await start_webgather("node", "--out", str(tmp_path / "out-b"), "--node-id", "b", *common))
            await _wait_for(lambda: all((shared / "checkpoints" / n / "manifest.json").exists() for n in "ab"), 30.0)
            _break_store(shared)
            broken = time.monotonic()
            assert all(p.returncode is None for p in procs), "the crawl ended before the store broke"
            async with asyncio.timeout(limit_s + 20.0):
                await asyncio.gather(*(p.wait() for p in procs))
            stopped_s = time.monotonic() - broken
        finally:
            results = [await finish(p, 30.0) for p in procs]
    for code, output in results:
        print(output)
    print(f"both stopped {stopped_s:.1f} s after the store broke; closure {len(expect)}")
    for code, output in results:
        assert code == ExitCode.CANNOT_CONTINUE, output
        errors = [line for line in output.splitlines() if line.startswith("webgather: error:")]
        assert len(errors) == 1 and f"shared store unavailable for more than {limit_s:g} s" in errors[0], errors
        assert "run the same command again" in errors[0]
    # their state is kept: each node's frontier and crawl log are on its disk
    assert all((tmp_path / f"out-{n}" / "nodes" / n / "crawl.log.jsonl").exists() for n in "ab")
