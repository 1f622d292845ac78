"""One nemesis schedule, end to end: a fresh web, Redis, store and cluster; the faults played at their
moments; then what survived read back and judged (``nemesis_checker.check``).

Used by bench/nemesis.py and tests/nemesis/test_nemesis.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import cluster_config, write_toml
from durability_helpers import M, archived_urls, log_entries, wait_defined
from nemesis_checker import Facts, RunFacts, Verdict, Window, check
from nemesis_cluster import CLOCK_RATE, Applied, Cluster, Run
from nemesis_schedule import STORE_FAULTS, Fault, last_heal_s
from nemesis_services import FileStoreService, RedisService, S3StoreService
from nemesis_web import read_records, web_params

from webgather.config import CrawlConfig
from webgather.testweb import WebModel
from webgather.testweb.closure import crawl_outcomes

WEB_SCRIPT = Path(__file__).with_name("nemesis_web.py")


@dataclass(frozen=True)
class Setup:
    """The knobs of a schedule's crawl (toy sizes by default)."""

    nodes: int = 3
    hosts: int = 16
    pages: float = 36.0
    web_seed: int = 1
    delay_s: float = 0.5
    store: str = "file"
    checkpoint_s: float = 1.0
    heartbeat_s: float = 0.25
    member_ttl_s: float = 2.0
    handoff_timeout_s: float = 10.0
    max_outage_s: float = 15.0
    end_bound_s: float = 90.0
    """Every process must have exited this long after the last fault healed."""
    start_timeout_s: float = 60.0


@dataclass
class Result:
    seed: int
    faults: list[Fault]
    verdict: Verdict
    applied: list[Applied]
    codes: dict[str, int | None]
    seconds: float
    tail_s: float
    """From the last heal to the last process's exit."""


async def run_schedule(work: Path, setup: Setup, seed: int, faults: list[Fault]) -> Result:
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    redis = RedisService(work / "redis")
    mount = any(f.kind in STORE_FAULTS["file"] for f in faults)
    store = FileStoreService(work / "shared", mount=mount) if setup.store == "file" else S3StoreService(work / "moto.log")
    web = await _start_web(work / "web", setup)
    try:
        await redis.start()
        await store.start()
        cluster, t0 = await _crawl(work, setup, redis, store, faults)
        await _stop_web(web)
        facts = _facts(work, setup, cluster, store)
    finally:
        if web.poll() is None:
            web.kill()
            web.wait()
        await redis.stop()
        await store.stop()
    heal = max([a.healed or a.at for a in cluster.applied] + [t0])
    return Result(seed, faults, check(facts), cluster.applied, {f"{r.node}.{r.index}": r.code for r in cluster.runs},
                  time.monotonic() - started, max(0.0, cluster.ended_at - heal))


async def _start_web(out: Path, setup: Setup) -> subprocess.Popen[bytes]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "web.err", "ab") as err:
        proc = subprocess.Popen([sys.executable, str(WEB_SCRIPT), str(out), "--hosts", str(setup.hosts),
                                 "--pages", str(setup.pages), "--seed", str(setup.web_seed)],
                                stdout=subprocess.PIPE, stderr=err)
    assert proc.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
    proc.stdout.close()
    if line.strip() != b"ready":
        proc.kill()
        proc.wait()
        raise RuntimeError(f"the test web did not start: {(out / 'web.err').read_text()[-500:]}")
    return proc


async def _stop_web(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(asyncio.to_thread(proc.wait), 60)


def crawl_config(work: Path, setup: Setup, store_url: str) -> CrawlConfig:
    """The crawl's config (also written to ``crawl.toml`` for the first node's --config)."""
    params = web_params(setup.hosts, setup.pages, setup.web_seed)
    config: CrawlConfig = cluster_config(params, work / "cfg", work / "web" / "resolve.txt", n_buckets=M,
                                         min_delay_s=setup.delay_s, checkpoint_s=setup.checkpoint_s,
                                         heartbeat_s=setup.heartbeat_s, member_ttl_s=setup.member_ttl_s,
                                         handoff_timeout_s=setup.handoff_timeout_s, max_outage_s=setup.max_outage_s,
                                         shared_store=store_url)
    # a failed robots.txt is retried after error_retry_s; politeness is measured here: make it the delay
    config = dataclasses.replace(config, robots=dataclasses.replace(config.robots, error_retry_s=setup.delay_s))
    write_toml(config, work / "crawl.toml")
    return config


async def _crawl(work: Path, setup: Setup, redis: RedisService, store: FileStoreService | S3StoreService,
                 faults: list[Fault]) -> tuple[Cluster, float]:
    seeds = (work / "web" / "seeds.txt").read_text().split()
    crawl_config(work, setup, store.url)
    cluster = Cluster(work, redis, store, work / "crawl.toml", seeds)
    t0 = time.monotonic()
    try:
        await cluster.start("n0", first=True)
        await wait_defined(f"redis://127.0.0.1:{redis.port}", setup.start_timeout_s)
        for i in range(1, setup.nodes):
            await cluster.start(f"n{i}")
        t0 = time.monotonic()
        await asyncio.gather(*(cluster.play(f, t0) for f in faults))
        heal = max([a.healed or a.at for a in cluster.applied] + [time.monotonic()])
        cluster.hung = [f"{r.node}.{r.index}" for r in await cluster.finish(heal + setup.end_bound_s)]
    finally:
        await cluster.kill_all()
    return cluster, t0


def _facts(work: Path, setup: Setup, cluster: Cluster, store: FileStoreService | S3StoreService) -> Facts:
    params = web_params(setup.hosts, setup.pages, setup.web_seed)
    seeds = (work / "web" / "seeds.txt").read_text().split()
    expected = crawl_outcomes(WebModel(params), seeds, crawl_config(work, setup, store.url))
    closure = {u for u in expected.fetched if expected.outcomes[u].status is not None}
    outs = [cluster.out(n) for n in cluster.nodes() if cluster.out(n).exists()]
    found, _ = archived_urls(work, store.reader(), outs)
    entries = [e for out in outs for log in sorted(out.glob("nodes/*/crawl.log.jsonl")) for e in log_entries(log)]
    entries += [e for copies in cluster.lost_disks.values() for log in copies for e in log_entries(log)]
    _real_times(entries, cluster.runs)
    last = {r.node: r.index for r in cluster.runs}
    runs = [RunFacts(r.node, r.index, r.code, r.killed, r.output(), last[r.node] == r.index) for r in cluster.runs]
    links = {u: e.links + ((e.redirect,) if e.redirect else ()) for u, e in expected.outcomes.items()}
    roots = frozenset(u for u, e in expected.outcomes.items() if e.depth == 0 and e.redirects == 0)
    return Facts(closure, found, entries, runs, read_records(work / "web" / "records.jsonl"), setup.delay_s,
                 _windows(cluster.applied, setup.checkpoint_s), cluster.hung, cluster.problems, links, roots)


def _real_times(entries: list[dict[str, Any]], runs: list[Run]) -> None:
    """A slow-clock node logs its own (slow) wall time: put its entries on the real clock (its run started
    with both clocks equal), so that the refetch windows judge them right."""
    slow = [(r.started_wall, r.node) for r in runs if r.slow_clock]
    for entry in entries:
        if entry.get("fetched_at") is None:
            continue
        stamp = float(entry["fetched_at"])
        starts = [w for w, node in slow if node == entry.get("node") and w <= stamp]
        if starts:
            entry["fetched_at"] = max(starts) + (stamp - max(starts)) / CLOCK_RATE


def _windows(applied: list[Applied], checkpoint_s: float) -> list[Window]:
    """Where a refetch is within the bound (nemesis_checker's module docstring), in wall-clock time."""
    windows = []
    for a in applied:
        kind = a.fault.kind
        if kind in ("join", "join_slow"):
            continue
        healed_wall = a.wall + ((a.healed or a.at) - a.at)
        after = checkpoint_s + 2.0 if kind in STORE_FAULTS["file"] + STORE_FAULTS["s3"] else 2.0
        node = None if kind.startswith(("redis_", "store_")) else a.fault.target
        windows.append(Window(node, a.wall - checkpoint_s - 2.0, healed_wall + after))
    return windows


def summary_line(result: Result) -> str:
    v = result.verdict
    status = "ok" if v.ok else "FAIL " + ", ".join(v.failures())
    return (f"seed {result.seed}: {status} | closure {v.closure} missing {v.missing} (failed fetches {v.failed}, cut off {v.cut_off}) lost {v.lost}"
            f"{' (silent)' if v.silent_loss else ''} DATA LOST said {'yes' if v.said_lost else 'no'}"
            f"{' stopped' if v.stopped else ''} | refetched {v.refetched} (outside bound {v.outside_bound}) | "
            f"at once {v.at_once} short {v.short_gaps} | tail {result.tail_s:.0f}s total {result.seconds:.0f}s | "
            + " ".join(f"{k}={c}" for k, c in result.codes.items()))


def record(result: Result, path: Path) -> None:
    """Append the schedule's result as one JSON line (for the docs' table and a second look)."""
    v = result.verdict
    row = {"seed": result.seed, "ok": v.ok, "faults": [dataclasses.asdict(f) for f in result.faults],
           "notes": [a.note for a in result.applied if a.note], "codes": result.codes,
           "applied": [{"fault": a.fault.text(), "wall": round(a.wall, 3),
                        "healed_wall": round(a.wall + (a.healed or a.at) - a.at, 3)} for a in result.applied],
           "verdict": {**dataclasses.asdict(v), "false_alarm": v.false_alarm, "silent_loss": v.silent_loss},
           "seconds": round(result.seconds, 1), "tail_s": round(result.tail_s, 1)}
    with path.open("a") as out:
        out.write(json.dumps(row) + "\n")
