"""Every local setting holds on every path that starts a node (``runtime.launch.start``, ``config.local``).

Each path runs a small crawl of a loopback web whose answers take 50 ms, with the node's settings
spread over the layers: the file says ``fetch.concurrency = 9`` and ``pin_cpu = "off"``, the
environment says ``fetch.concurrency = 3`` (it wins over the file), ``fetch.source_address`` and the
two crawl settings a node may set for itself (``fetch.proxy``, ``hooks.items``), a
flag (or, for the API, the environment) sets ``metrics``. Every node's summary must record exactly
those (``node_settings``), and a one-node path must have kept to 3 requests in flight at the server
(robots.txt included), with eight hosts' robots.txt owed at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from webgather.config import to_toml
from webgather.testweb import TestWebServer, WebModel, max_in_flight
from webgather.testweb.latency import LatencyModel
from webgather.testweb.params import WebParams, crawl_config_for

PARAMS = WebParams.for_tests(n_hosts=8, mean_pages_per_host=4.0, hosts_per_ip=8, very_slow_s=0.3)
ENV = {"WEBGATHER_FETCH__CONCURRENCY": "3", "WEBGATHER_FETCH__SOURCE_ADDRESS": "127.0.0.1",
       "WEBGATHER_FETCH__PROXY": "direct", "WEBGATHER_HOOKS__ITEMS": "node-items.jsonl"}
METRICS = "127.0.0.1:0"
EXPECTED = {"fetch.concurrency": 3, "pin_cpu": "off", "fetch.source_address": "127.0.0.1", "metrics": METRICS,
            "fetch.proxy": "direct", "hooks.items": "node-items.jsonl"}
NODE_FILE = 'pin_cpu = "off"\n[fetch]\nconcurrency = 9\n'
"""A node's own file: only its settings (the crawl's come from its definition)."""


@dataclass
class Web:
    server: TestWebServer
    tmp: Path
    crawl_file: Path
    """The crawl's settings, with the node's file settings among them."""
    node_file: Path
    out: Path

    @property
    def seeds(self) -> list[str]:
        return [self.server.home_url(h) for h in range(PARAMS.n_hosts)]


def _crawl_file(server: TestWebServer, tmp: Path) -> Path:
    config = crawl_config_for(PARAMS)
    config = dataclasses.replace(
        config, pin_cpu="off", progress=False,
        fetch=dataclasses.replace(config.fetch, concurrency=9, total_timeout_s=5.0,
                                  resolve_file=str(server.write_resolve_file(tmp / "resolve.txt"))),
        politeness=dataclasses.replace(config.politeness, per_ip_connections=8),
        cluster=dataclasses.replace(config.cluster, n_buckets=16, heartbeat_s=0.1, member_ttl_s=2.0))
    path = tmp / "crawl.toml"
    path.write_text(to_toml(config))
    return path


async def _cli(*args: str, env: dict[str, str] | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env={**os.environ, **ENV, **(env or {})})
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:  # a timeout: end it (its workers end with their parent's pipe)
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, output.decode(errors="replace")
    return output.decode(errors="replace")


async def _start_in_redis(web: Web, url: str, name: str, node: str) -> None:
    """Define a crawl in Redis (as ``crawl --redis`` does) without running a node."""
    from webgather.cluster.redis import RedisBackend
    from webgather.config import load
    from webgather.runtime.launch.cluster import start_crawl

    config = load(web.crawl_file, {}, {"out_dir": str(web.out)})
    backend = await RedisBackend.connect(url, name, config.cluster.n_buckets)
    try:
        await start_crawl(backend, config, web.seeds, nodes=[node])
    finally:
        await backend.aclose()


def _api(web: Web, monkeypatch: pytest.MonkeyPatch, **cluster: Any) -> Any:
    import webgather

    for name, value in {**ENV, "WEBGATHER_METRICS": METRICS}.items():
        monkeypatch.setenv(name, value)
    return webgather.Crawl(web.seeds, out=web.out, config=web.crawl_file, **cluster).run_async()


async def _run_path(path: str, web: Web, redis: str | None, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Run the crawl on ``path``; the directories of the nodes' summaries."""
    common = ["--config", str(web.crawl_file), "--out", str(web.out), "--metrics", METRICS, "--no-progress"]
    if path == "crawl":
        await _cli("crawl", *web.seeds, *common)
        return [web.out]
    if path == "crawl --redis":
        assert redis is not None
        await _cli("crawl", *web.seeds, *common, "--redis", redis, "--crawl", "r", "--node-id", "n1")
        return [web.out / "nodes" / "n1"]
    if path == "crawl --workers":
        await _cli("crawl", *web.seeds, *common, "--workers", "2")
        return [web.out / "nodes" / "w0", web.out / "nodes" / "w1"]
    if path == "node":
        assert redis is not None
        await _start_in_redis(web, redis, "j", "n2")
        web.node_file.write_text(NODE_FILE)
        await _cli("node", "--redis", redis, "--crawl", "j", "--node-id", "n2", "--out", str(web.out),
                   "--config", str(web.node_file), "--metrics", METRICS)
        return [web.out / "nodes" / "n2"]
    if path == "recrawl":
        await _cli("crawl", *web.seeds, "--config", str(web.crawl_file), "--out", str(web.out), env={
            "WEBGATHER_FETCH__CONCURRENCY": "1"})
        web.server.records.clear()
        web.node_file.write_text(NODE_FILE)
        await _cli("recrawl", str(web.out), "--config", str(web.node_file), "--metrics", METRICS, "--cycle", "1s")
        return [web.out]
    if path == "crawl --continuous":
        await _cli("crawl", *web.seeds, *common, "--continuous", "--max-cycles", "1", "--cycle", "1s")
        return [web.out]
    if path == "api workers":
        await _api(web, monkeypatch, workers=2)
        return [web.out / "nodes" / "w0", web.out / "nodes" / "w1"]
    assert path == "api redis" and redis is not None
    from webgather.commands.node import default_node_id

    await _api(web, monkeypatch, redis=redis, crawl_id="a")
    return [web.out / "nodes" / default_node_id()]


PATHS = ["crawl", "crawl --redis", "crawl --workers", "node", "recrawl", "crawl --continuous", "api workers",
         "api redis"]
ONE_NODE = {"crawl", "crawl --redis", "node", "recrawl", "crawl --continuous", "api redis"}


@pytest.mark.parametrize("path", PATHS)
async def test_every_local_setting_holds_on_every_path(path: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    slow = LatencyModel(base_s=0.05, per_unit_s=0.0, jitter=0.0)
    async with TestWebServer(WebModel(PARAMS), latency=slow) as server:
        web = Web(server, tmp_path, _crawl_file(server, tmp_path), tmp_path / "node.toml", tmp_path / "out")
        if "redis" in path or path == "node":
            from webgather.cluster.embedded import EmbeddedRedis

            with EmbeddedRedis(tmp_path / "redis") as redis:
                dirs = await _run_path(path, web, redis.url, monkeypatch)
        else:
            dirs = await _run_path(path, web, None, monkeypatch)
    peak = max_in_flight(server.records, lambda r: "all").get("all", 0)
    assert peak <= 3 * len(dirs), f"{path}: {peak} requests in flight with fetch.concurrency 3 per node"
    if path in ONE_NODE:
        assert len(dirs) == 1
    summaries = [json.loads((node_dir / "summary.json").read_text()) for node_dir in dirs]
    assert sum(s["pages"] for s in summaries) > 0, summaries  # a worker may own none of the eight hosts
    for node_dir, summary in zip(dirs, summaries, strict=True):
        settings = {key: summary["node_settings"][key] for key in EXPECTED}
        assert settings == EXPECTED, f"{path}: {node_dir.name} ran with {settings}"
