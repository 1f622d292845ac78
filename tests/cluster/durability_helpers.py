"""The durability scenario: 3 node processes with separate --out directories, one killed -9 mid-crawl
and its --out deleted; then what survives (shared store + surviving nodes' directories) is read back.

Used by tests/cluster/test_shared_store_durability.py and bench/durability.py (the before/after table).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import kill_tree

from webgather.cluster.embedded import EmbeddedRedis
from webgather.store.crawllog import read_crawl_log
from webgather.store.shared import SharedStore, open_store
from webgather.testweb import TestWebServer, WebModel
from webgather.testweb.closure import crawl_outcomes

NODES = ("a", "b", "c")
VICTIM = "b"
NOT_FETCHED = ("robots", "robots_unavailable", "off_scope")


@dataclass
class Outcome:
    closure: int
    """URLs of the closure whose final fetch has a response (a record must survive for each)."""
    archived: int
    missing: list[str]
    refetched: int
    """URLs the victim had fetched that a surviving node fetched again."""
    bound: int
    """The victim's pages started since its last checkpoint's snapshot (2 s margin for those in flight then)."""
    exit_codes: dict[str, int | None]
    victim_pages: int = 0
    """Pages (final fetches) the victim had done when it was killed."""
    unattempted: int = 0
    """Missing URLs no node ever logged an attempt of (the rest were attempted and got no response:
    a timeout or reset where the model expects an answer, which load on a shared machine causes)."""
    refetched_ages: list[float] = field(default_factory=list)
    """For each refetched URL, when the victim had started it, relative to its last checkpoint's snapshot (s)."""
    counters: dict[str, Any] = field(default_factory=dict)
    cdxj_mismatch: list[str] = field(default_factory=list)
    redis_peak_bytes: int = 0

    def row(self) -> str:
        return (f"closure {self.closure}  archived {self.archived}  missing {len(self.missing)} "
                f"(never attempted {self.unattempted})  "
                f"victim's pages {self.victim_pages}  refetched {self.refetched}  bound {self.bound}")


def _responses(path: Path) -> list[str]:
    from warcio.archiveiterator import ArchiveIterator

    with path.open("rb") as stream:
        return [str(r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(stream)
                if r.rec_type == "response"]


def _final_urls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [e["url"] for e in read_crawl_log(log) if not e.get("retry") and e.get("kind") in ("page", "sitemap")
            and e.get("error") not in NOT_FETCHED]


async def _start(args: list[str], log: Path) -> asyncio.subprocess.Process:
    handle = log.open("wb")
    try:
        return await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args, stdout=handle,
                                                    stderr=asyncio.subprocess.STDOUT)
    finally:
        handle.close()


def _archived(tmp: Path, store: SharedStore | None, outs: list[Path]) -> tuple[Counter[str], list[str]]:
    """Response records per URL over every surviving WARC file (each file once), and CDXJ mismatches."""
    files: dict[str, Path] = {}
    mismatch = []
    if store is not None:
        (tmp / "fetched").mkdir(exist_ok=True)
        for key in store.list("warc/"):
            local = tmp / "fetched" / key.removeprefix("warc/")
            local.write_bytes(store.get_bytes(key) or b"")
            files[local.name] = local
            lines = (store.get_bytes(f"cdxj/{local.name}.cdxj") or b"").decode().splitlines()
            if len(lines) != len(_responses(local)):
                mismatch.append(f"{local.name}: {len(lines)} cdxj lines, {len(_responses(local))} responses")
    for out in outs:
        for path in out.glob("nodes/*/warc/*.warc.gz"):
            files.setdefault(path.name, path)
    counts: Counter[str] = Counter()
    for path in files.values():
        counts.update(set(_responses(path)))
    return counts, mismatch


async def _wait_kill_point(store: SharedStore | None, victim_log: Path, pages: int, timeout_s: float) -> None:
    """Until the victim fetched ``pages`` pages and (with a store) completed a checkpoint."""
    async with asyncio.timeout(timeout_s):
        while True:
            if victim_log.exists() and victim_log.read_text().count('"kind":"page"') >= pages:
                if store is None or store.exists(f"checkpoints/{VICTIM}/manifest.json"):
                    return
            await asyncio.sleep(0.05)


async def run_scenario(tmp: Path, store_url: str | None, *, n_hosts: int = 24, kill_after_pages: int = 20,
                       timeout_s: float = 160.0, checkpoint_s: float = 0.5, min_delay_s: float = 0.25,
                       kill: bool = True, claim_idle_s: float = 5.0, **web: Any) -> Outcome:
    params = small_web(n_hosts=n_hosts, **web)
    model = WebModel(params)
    async with TestWebServer(model) as srv, EmbeddedRedis(tmp / "redis") as redis:
        resolve = srv.write_resolve_file(tmp / "resolve.txt")
        extra = {"shared_store": store_url} if store_url else {}
        config = cluster_config(params, tmp / "cfg", resolve, n_buckets=64, min_delay_s=min_delay_s,
                                checkpoint_s=checkpoint_s, claim_idle_s=claim_idle_s, **extra)
        toml = write_toml(config, tmp / "crawl.toml")
        seeds = [srv.home_url(0), srv.home_url(3)]
        outs = {n: tmp / f"out-{n}" for n in NODES}
        common = ["--redis", redis.url, "--crawl", "dur"]
        procs = {"a": await _start(["crawl", *seeds, "--out", str(outs["a"]), "--config", str(toml), "--no-progress",
                                    *common, "--node-id", "a"], tmp / "a.log")}
        await _wait_defined(redis.url, timeout_s / 4)
        for n in NODES[1:]:
            procs[n] = await _start(["node", *common, "--out", str(outs[n]), "--node-id", n], tmp / f"{n}.log")
        store = open_store(store_url) if store_url else None
        victim_log = outs[VICTIM] / "nodes" / VICTIM / "crawl.log.jsonl"
        victim: list[dict[str, Any]] = []
        try:
            if kill:
                await _wait_kill_point(store, victim_log, kill_after_pages, timeout_s / 2)
                os.kill(procs[VICTIM].pid, signal.SIGKILL)
                await procs[VICTIM].wait()
                victim = [e for e in read_crawl_log(victim_log) if not e.get("retry")
                          and e.get("kind") in ("page", "sitemap") and e.get("error") not in NOT_FETCHED]
                shutil.rmtree(outs[VICTIM])  # its disk is lost
            async with asyncio.timeout(timeout_s / 2):
                for n in NODES:
                    await procs[n].wait()
            peak, counters = await _redis_figures(redis.url)
        finally:
            for proc in procs.values():
                if proc.returncode is None:
                    kill_tree(proc.pid)
                    await proc.wait()
    expected = crawl_outcomes(model, seeds, config)
    want = {u for u in expected.fetched if expected.outcomes[u].status is not None}
    alive = [n for n in NODES if n != VICTIM or not kill]
    counts, mismatch = _archived(tmp, store, [outs[n] for n in alive])
    survivors = {u for n in alive if n != VICTIM for u in _final_urls(outs[n] / "nodes" / n / "crawl.log.jsonl")}
    attempted = {e["url"] for n in alive for e in read_crawl_log(outs[n] / "nodes" / n / "crawl.log.jsonl")}
    attempted |= {e["url"] for e in victim}
    missing = sorted(want - set(counts))
    wall = _manifest_wall(store)
    bound = sum(1 for e in victim if float(e["fetched_at"]) >= wall - 2.0) if store is not None else len(victim)
    return Outcome(
        closure=len(want), archived=len(want & set(counts)), missing=missing,
        refetched=len({e["url"] for e in victim} & survivors), bound=bound, victim_pages=len(victim),
        exit_codes={n: p.returncode for n, p in procs.items()}, unattempted=len(set(missing) - attempted),
        refetched_ages=sorted(round(float(e["fetched_at"]) - wall, 2) for e in victim if e["url"] in survivors),
        counters=counters, cdxj_mismatch=mismatch, redis_peak_bytes=peak)


async def _wait_defined(url: str, timeout_s: float) -> None:
    """Until the first node has stored the crawl's definition (a node cannot join before)."""
    from webgather.cluster import definition
    from webgather.cluster.redis import RedisBackend

    backend = await RedisBackend.connect(url, "dur", 64)
    try:
        async with asyncio.timeout(timeout_s):
            while await definition.read(backend) is None:
                await asyncio.sleep(0.05)
    finally:
        await backend.aclose()


def _manifest_wall(store: SharedStore | None) -> float:
    raw = store.get_bytes(f"checkpoints/{VICTIM}/manifest.json") if store is not None else None
    return float(json.loads(raw)["wall"]) if raw else 0.0


async def _redis_figures(url: str) -> tuple[int, dict[str, int]]:
    """Redis's peak memory (``INFO memory`` used_memory_peak) and the crawl's counters."""
    import redis.asyncio as aioredis

    from webgather.cluster.redis import RedisBackend

    client = aioredis.from_url(url)
    backend = await RedisBackend.connect(url, "dur", 64)
    try:
        return int((await client.info("memory"))["used_memory_peak"]), await backend.coordinator().counters()
    finally:
        await client.aclose()
        await backend.aclose()
