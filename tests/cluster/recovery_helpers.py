"""A cluster of node processes (each its own --out, one Redis, a file:// shared store) that a test
drives by name: start, kill -9 (with or without the disk), SIGTERM and start again. At the end,
what survives is read back: closure URLs with no response record in a surviving WARC, pages
fetched twice, the crawl's counters, each process's exit code and output.

Used by tests/cluster/test_cluster_recovery_faults.py (joins, the coordinator lost right after a
table change, rolling restarts)."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import kill_tree
from durability_helpers import _start, archived_urls, final_entries, log_entries
from fault_figures import fetched_twice

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.mapping import BucketTable
from webgather.cluster.redis import RedisBackend
from webgather.store.shared import open_store
from webgather.testweb import TestWebServer, WebModel
from webgather.testweb.closure import crawl_outcomes

CRAWL = "rec"
M = 64


@dataclass
class Result:
    closure: int
    missing: list[str]
    refetched: int
    counters: dict[str, int]
    exit_codes: dict[str, int | None]
    """By process key (``b``, ``b#2`` for b's second process...)."""
    outputs: dict[str, str]
    ended_s: float
    """From the start of the first node to the exit of the last process."""
    last_fetch_s: float
    """From the start of the first node to the last final fetch any node logged."""
    load_failed: list[str] = field(default_factory=list)
    """Missing URLs every page linking to which ended with an error the web does not serve (a timeout
    or reset: the load of a shared machine), or is itself such a URL: not the cluster's loss."""

    def lost(self) -> list[str]:
        """Missing URLs the cluster lost (``missing`` less ``load_failed``)."""
        return sorted(set(self.missing) - set(self.load_failed))

    def row(self) -> str:
        return (f"closure {self.closure}  missing {len(self.missing)} (under load {len(self.load_failed)})  refetched {self.refetched}  "
                f"ended {self.ended_s:.1f} s (last fetch {self.last_fetch_s:.1f} s)  exits {self.exit_codes}")

    def lost_lines(self) -> list[str]:
        return [f"{key}: {line}" for key, text in self.outputs.items() for line in text.splitlines()
                if "DATA LOST" in line]


@dataclass
class Cluster:
    tmp: Path
    redis: EmbeddedRedis
    seeds: list[str]
    toml: Path
    store_url: str
    procs: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    gone: set[str] = field(default_factory=set)
    """Nodes whose --out was deleted (their disk is lost)."""
    _runs: dict[str, int] = field(default_factory=dict)

    def out(self, node: str) -> Path:
        return self.tmp / f"out-{node}"

    def key(self, node: str) -> str:
        """The key of ``node``'s current process."""
        n = self._runs[node]
        return node if n == 1 else f"{node}#{n}"

    async def start(self, node: str) -> None:
        """Node ``a`` is started with ``crawl SEEDS`` (every time, as an operator restarts it); the
        others with ``node``."""
        common = ["--redis", self.redis.url, "--crawl", CRAWL, "--out", str(self.out(node)), "--node-id", node]
        if node == "a":
            args = ["crawl", *self.seeds, "--config", str(self.toml), "--no-progress", *common]
        else:
            args = ["node", *common]
        self._runs[node] = self._runs.get(node, 0) + 1
        self.procs[self.key(node)] = await _start(args, self.tmp / f"{self.key(node).replace('#', '-')}.log")
        if node == "a" and self._runs[node] == 1:
            await self.wait_for(lambda b: _defined(b), 30.0)

    async def kill(self, node: str, disk: bool = True) -> None:
        """kill -9; ``disk`` False: its --out is deleted too."""
        proc = self.procs[self.key(node)]
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        if not disk:
            shutil.rmtree(self.out(node))
            self.gone.add(node)

    async def term(self, node: str, timeout_s: float) -> int:
        """SIGTERM (a graceful leave) and wait for the process; its exit code."""
        proc = self.procs[self.key(node)]
        if proc.returncode is None:  # (it may have ended with the crawl)
            proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(timeout_s):
            return await proc.wait()

    async def table(self) -> BucketTable | None:
        return await self.with_backend(lambda b: b.coordinator().get_table())

    async def counters(self) -> dict[str, int]:
        return await self.with_backend(lambda b: b.coordinator().counters())

    async def with_backend(self, fn: Any) -> Any:
        backend = await RedisBackend.connect(self.redis.url, CRAWL, M)
        try:
            return await fn(backend)
        finally:
            await backend.aclose()

    async def wait_for(self, check: Any, timeout_s: float, every_s: float = 0.02) -> None:
        """Until ``await check(backend)`` is true (one connection for the whole wait)."""
        backend = await RedisBackend.connect(self.redis.url, CRAWL, M)
        try:
            async with asyncio.timeout(timeout_s):
                while not await check(backend):
                    await asyncio.sleep(every_s)
        finally:
            await backend.aclose()

    async def wait_member(self, node: str, timeout_s: float) -> None:
        """Until ``node``'s current process heartbeats (or has exited: the crawl may be over)."""
        proc = self.procs[self.key(node)]

        async def up(backend: RedisBackend) -> bool:
            return proc.returncode is not None or node in await backend.coordinator().members()

        await self.wait_for(up, timeout_s, every_s=0.05)

    def pages(self, node: str) -> int:
        return len(final_entries(log_entries(self.out(node) / "nodes" / node / "crawl.log.jsonl")))

    async def wait_pages(self, node: str, n: int, timeout_s: float) -> None:
        async with asyncio.timeout(timeout_s):
            while self.pages(node) < n:
                await asyncio.sleep(0.05)

    async def wait_all(self, timeout_s: float) -> float:
        """Until every process has exited; the time the last one did (seconds since the start)."""
        async with asyncio.timeout(timeout_s):
            for proc in list(self.procs.values()):
                await proc.wait()
        return time.time() - self.started


async def _defined(backend: RedisBackend) -> bool:
    from webgather.cluster import definition

    return await definition.read(backend) is not None


@asynccontextmanager
async def cluster(tmp: Path, *, n_hosts: int = 24, min_delay_s: float = 0.25, **settings: Any,
                  ) -> AsyncIterator[tuple[Cluster, list[Result]]]:
    """A running test web, Redis and shared store; the block drives the nodes and waits for them;
    on exit the result is appended to the yielded list (every process still running is killed)."""
    params = small_web(n_hosts=n_hosts, mean_pages_per_host=20.0)
    model = WebModel(params)
    store_url = (tmp / "shared").as_uri()
    results: list[Result] = []
    async with TestWebServer(model) as srv, EmbeddedRedis(tmp / "redis") as redis:
        config = cluster_config(params, tmp / "cfg", srv.write_resolve_file(tmp / "resolve.txt"), n_buckets=M,
                                min_delay_s=min_delay_s, shared_store=store_url, **settings)
        config = dataclasses.replace(config, robots=dataclasses.replace(config.robots, error_retry_s=min_delay_s))
        seeds = [srv.home_url(0), srv.home_url(3)]
        c = Cluster(tmp, redis, seeds, write_toml(config, tmp / "crawl.toml"), store_url)
        ended = 0.0
        try:
            yield c, results
            ended = time.time() - c.started
        finally:
            for proc in c.procs.values():
                if proc.returncode is None:
                    kill_tree(proc.pid)
                    await proc.wait()
        counters = await c.counters()
        results.append(_result(c, crawl_outcomes(model, seeds, config), counters, ended))


def _result(c: Cluster, expected: Any, counters: dict[str, int], ended: float) -> Result:
    want = {u for u in expected.fetched if expected.outcomes[u].status is not None}
    nodes = sorted({key.split("#")[0] for key in c.procs})
    found, _mismatch = archived_urls(c.tmp, open_store(c.store_url), [c.out(n) for n in nodes if n not in c.gone])
    every = [e for n in nodes if n not in c.gone for e in log_entries(c.out(n) / "nodes" / n / "crawl.log.jsonl")]
    entries = final_entries(every)
    last = max((float(e["fetched_at"]) for e in entries), default=c.started) - c.started
    outputs = {key: (c.tmp / f"{key.replace('#', '-')}.log").read_text(errors="replace") for key in c.procs}
    missing = sorted(want - found)
    return Result(closure=len(want), missing=missing, refetched=len(fetched_twice(entries)),
                  counters=counters, exit_codes={k: p.returncode for k, p in c.procs.items()},
                  outputs=outputs, ended_s=ended, last_fetch_s=last,
                  load_failed=_load_failed(expected, missing, every))


LOAD_ERRORS = ("timeout", "reset", "robots_unavailable")
"""Final errors where the web served an answer: the machine's load (a dropped URL is not fetched again)."""


def _load_failed(expected: Any, missing: list[str], entries: list[dict[str, Any]]) -> list[str]:
    """The missing URLs explained by pages that failed under load (:attr:`Result.load_failed`)."""
    failed = {e["url"] for e in entries if not e.get("retry") and e.get("error") in LOAD_ERRORS
              and expected.outcomes.get(e["url"]) is not None and expected.outcomes[e["url"]].error is None}
    missing_failed = [url for url in missing if url in failed]
    linkers: dict[str, set[str]] = {}
    for url, outcome in expected.outcomes.items():
        for link in outcome.links:
            linkers.setdefault(link, set()).add(url)
    excused: set[str] = set(missing_failed)
    grew = True
    while grew:
        grew = False
        for url in missing:
            if url not in excused and linkers.get(url) and linkers[url] <= failed | excused:
                excused.add(url)
                grew = True
    return sorted(excused)
