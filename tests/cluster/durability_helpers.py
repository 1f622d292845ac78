"""Fault scenarios over 3 node processes with separate --out directories (as on separate machines),
one Redis and, usually, a shared store; then what survives (shared store + surviving nodes'
directories) is read back and measured.

Faults (``run_scenario(fault=...)``), each applied to node b once it fetched ``kill_after_pages`` pages
and (with a store) completed a checkpoint:

* ``kill_delete``: kill -9, and its --out deleted (the machine and its disk are gone);
* ``kill_restart``: kill -9, and once the others recovered its buckets, started again with the same --out;
* ``stop``: SIGSTOP for ``pause_s`` (past its lease), then SIGCONT;
* ``term``: SIGTERM, a graceful leave (its buckets are handed over);
* ``redis_restart``: the Redis process killed -9 and, ``pause_s`` later, started again from its data;
* ``none``: no fault.

Used by tests/cluster/test_shared_store_durability.py, bench/durability.py and bench/cluster_faults.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import kill_tree
from fault_figures import fetched_twice, gave_up, hosts_back_s, politeness, recovery_s

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.mapping import bucket_of
from webgather.store.crawllog import read_crawl_log
from webgather.store.shared import SharedStore, open_store
from webgather.testweb import TestWebServer, WebModel
from webgather.testweb.closure import crawl_outcomes
from webgather.urls import host_key

NODES = ("a", "b", "c")
VICTIM = "b"
AGAIN = "b again"
"""The victim's second process (``kill_restart``)."""
NOT_FETCHED = ("robots", "robots_unavailable", "off_scope")
FAULTS = ("kill_delete", "kill_restart", "stop", "term", "redis_restart", "none")
NODE_FAULTS = ("kill_delete", "kill_restart", "stop", "term")
CRAWL = "dur"
M = 64
BOUND_MARGIN_S = 2.0
"""Pages the victim started up to this long before its last checkpoint's snapshot count in the bound
(those in flight at the snapshot, queued in it)."""


@dataclass
class Outcome:
    closure: int
    """URLs of the closure whose final fetch has a response (a record must survive for each)."""
    archived: int
    missing: list[str]
    refetched: int
    """URLs fetched more than once over every node's crawl log (the victim's as it was at the fault
    when its --out is deleted)."""
    bound: int
    """The victim's pages started since its last checkpoint's snapshot before the fault (BOUND_MARGIN_S
    margin for those in flight then); without a store, every page it had done."""
    exit_codes: dict[str, int | None]
    victim_pages: int = 0
    """Pages (final fetches) the victim had done at the fault."""
    unattempted: int = 0
    """Missing URLs no node ever logged an attempt of (the rest were attempted and got no response:
    a timeout or reset where the model expects an answer, which load on a shared machine causes)."""
    refetched_ages: list[float] = field(default_factory=list)
    """For each refetched URL the victim had fetched, when it had started it, relative to its last
    checkpoint's snapshot (s)."""
    counters: dict[str, Any] = field(default_factory=dict)
    cdxj_mismatch: list[str] = field(default_factory=list)
    redis_peak_bytes: int = 0
    """Highest ``used_memory_peak`` (INFO memory) sampled during the run (a restarted Redis starts a new peak)."""
    fault: str = "kill_delete"
    at_once: int = 0
    """Politeness, from the server's records: successive requests to one host that overlapped."""
    short_gaps: int = 0
    """... that came closer than the delay (see fault_figures.politeness)."""
    resends: int = 0
    """... that were the transport's RFC 9112 re-send after an unanswered reset (fault_figures.Politeness)."""
    politeness_examples: tuple[str, ...] = ()
    recover_s: float = 0.0
    """From the fault to the crawl's pages/s back at half its pre-fault rate (fault_figures.recovery_s);
    with no fault, from the moment the fault would have been applied (the figure's baseline)."""
    outside_bound: list[str] = field(default_factory=list)
    """URLs fetched twice that are not among the victim's pages counted in ``bound``."""
    victim_after: int = 0
    """Pages (final fetches) the victim did after the fault (thawed, restarted or leaving)."""
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each surviving node's summary.json (the victim's: its last process's)."""
    checkpoint_wall: float = 0.0
    """Wall time of the victim's last checkpoint's snapshot at the fault (0: it had completed none)."""
    hosts_back_s: float | None = None
    """From the fault to the first request, by any node, to a host the victim had requested before it
    (fault_figures.hosts_back_s); None if none came, or the fault was not the victim's."""

    def row(self) -> str:
        return (f"closure {self.closure}  archived {self.archived}  missing {len(self.missing)} "
                f"(never attempted {self.unattempted})  "
                f"victim's pages {self.victim_pages}  refetched {self.refetched}  bound {self.bound}")


def _responses(path: Path) -> list[str]:
    from warcio.archiveiterator import ArchiveIterator

    with path.open("rb") as stream:
        return [str(r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(stream)
                if r.rec_type == "response"]


def final_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if not e.get("retry") and e.get("kind") in ("page", "sitemap")
            and e.get("error") not in NOT_FETCHED]


def log_entries(log: Path) -> list[dict[str, Any]]:
    return list(read_crawl_log(log)) if log.exists() else []


async def _start(args: list[str], log: Path, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    handle = log.open("ab")
    try:
        return await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args, stdout=handle, env=env,
                                                    stderr=asyncio.subprocess.STDOUT)
    finally:
        handle.close()


def archived_urls(tmp: Path, store: SharedStore | None, outs: list[Path]) -> tuple[set[str], list[str]]:
    """URLs with a response record in a surviving WARC file (each file once), and CDXJ mismatches."""
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
    found: set[str] = set()
    for path in files.values():
        found.update(_responses(path))
    return found, mismatch


@dataclass
class _Cluster:
    """The running scenario: what the fault drivers act on."""

    tmp: Path
    redis: EmbeddedRedis
    store: SharedStore | None
    outs: dict[str, Path]
    args: dict[str, list[str]]
    procs: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    victim: list[dict[str, Any]] = field(default_factory=list)
    """Every line of the victim's crawl log at the fault (its final state when its --out is deleted)."""
    checkpoint_wall: float = 0.0
    """Wall time of the victim's last checkpoint's snapshot at the fault (0: none)."""
    victim_buckets: set[int] = field(default_factory=set)
    """The buckets the victim's last checkpoint at the fault lists (with a store)."""
    peak: int = 0
    """Redis's highest sampled ``used_memory_peak`` (bytes)."""
    fault_wall: float = 0.0
    victim_env: dict[str, str] | None = None
    """The victim's environment (e.g. libfaketime's, for a clock that runs slow), None: this one's."""
    victim_first: bool = False
    """Start the third node only once a table names the victim, and apply the fault only once the
    victim has applied a table naming all three: it gained buckets alone, then handed some of them
    to the third node (what it read there stays unacked until its checkpoint)."""

    def log(self, node: str) -> Path:
        return self.outs[node] / "nodes" / node / "crawl.log.jsonl"

    async def start(self, node: str, key: str | None = None) -> None:
        env = self.victim_env if node == VICTIM else None
        self.procs[key or node] = await _start(self.args[node], self.tmp / f"{node}.log", env)

    def mark_fault(self) -> None:
        self.victim = log_entries(self.log(VICTIM))
        self.checkpoint_wall = _manifest_wall(self.store)
        raw = self.store.get_bytes(f"checkpoints/{VICTIM}/manifest.json") if self.store is not None else None
        self.victim_buckets = {int(b) for b in json.loads(raw)["buckets"]} if raw else set()

    def victim_hosts(self) -> set[str]:
        """Hosts the victim requested before the fault in the buckets it held then (with a store: its
        last checkpoint's; without: those it requested in the last BOUND_MARGIN_S)."""
        if self.victim_buckets:
            return {e["host"] for e in self.victim if bucket_of(host_key(e["url"]), M) in self.victim_buckets}
        return {e["host"] for e in self.victim if float(e.get("fetched_at") or 0) >= self.fault_wall - BOUND_MARGIN_S}


async def _wait_kill_point(c: _Cluster, pages: int, crawled_s: float | None, timeout_s: float) -> None:
    """Until the victim fetched ``pages`` pages and (with a store) completed a checkpoint whose snapshot
    came ``crawled_s`` or more after its first fetch (``crawled_s`` None: before any checkpoint).
    The victim ending first is the scenario's own failure, said at once (not a timeout that reads like
    a hang): on a loaded machine node a can crawl most of a small web while b and c start."""
    log = c.log(VICTIM)
    async with asyncio.timeout(timeout_s):
        while True:
            if c.procs[VICTIM].returncode is not None:
                got = log.read_text().count('"kind":"page"') if log.exists() else 0
                raise AssertionError(f"node {VICTIM} ended (exit {c.procs[VICTIM].returncode}) after {got} page "
                                     f"lines, before the fault's point ({pages} pages): the scenario did not happen")
            if log.exists() and log.read_text().count('"kind":"page"') >= pages:
                if c.store is None or crawled_s is None:
                    return
                first = min((float(e["fetched_at"]) for e in final_entries(log_entries(log))), default=math.inf)
                if _manifest_wall(c.store) >= first + crawled_s:
                    return
            await asyncio.sleep(0.05)


async def _signal_victim(c: _Cluster, sig: signal.Signals) -> None:
    os.kill(c.procs[VICTIM].pid, sig)
    c.mark_fault()
    if sig == signal.SIGKILL:
        await c.procs[VICTIM].wait()
        c.mark_fault()  # the log as the killed process left it


async def _apply_fault(c: _Cluster, fault: str, pause_s: float, timeout_s: float) -> None:
    if fault in ("kill_delete", "kill_restart"):
        await _signal_victim(c, signal.SIGKILL)
        if fault == "kill_delete":
            shutil.rmtree(c.outs[VICTIM])  # its disk is lost
        else:
            await _wait_recovered(c.redis.url, timeout_s)
            await c.start(VICTIM, AGAIN)  # same --out, same node id
    elif fault == "stop":
        await _signal_victim(c, signal.SIGSTOP)
        await asyncio.sleep(pause_s)
        os.kill(c.procs[VICTIM].pid, signal.SIGCONT)
    elif fault == "term":
        await _signal_victim(c, signal.SIGTERM)
    elif fault == "redis_restart":
        await asyncio.to_thread(c.redis.kill)
        c.mark_fault()
        await asyncio.sleep(pause_s)
        await asyncio.to_thread(c.redis.start)  # same address, its data from the AOF
    elif fault != "none":
        raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")


async def _wait_recovered(url: str, timeout_s: float) -> None:
    """Until a surviving node finished recovering the victim's buckets (``recover.done.<victim>``)."""
    async with asyncio.timeout(timeout_s):
        while (await _counters(url)).get(f"recover.done.{VICTIM}", 0) < 1:
            await asyncio.sleep(0.1)


@asynccontextmanager
async def _peak_sampler(url: str, every_s: float = 0.25) -> AsyncIterator[list[int]]:
    """Samples ``used_memory_peak`` while the block runs (a Redis that is away is skipped); the list
    holds the highest value seen. Stopped by a flag as well as a cancel: a cancel that lands as a read
    times out can come out as a timeout (Python 3.11's asyncio.timeout), which the loop would swallow
    and sample on forever (a run sat 15 minutes, event loop idle, after its crawl had ended)."""
    import redis.asyncio as aioredis

    peak = [0]
    done = asyncio.Event()

    async def sample() -> None:
        client = aioredis.from_url(url, socket_timeout=2.0)
        try:
            while not done.is_set():
                try:
                    peak[0] = max(peak[0], int((await client.info("memory"))["used_memory_peak"]))
                except Exception:  # noqa: BLE001 - Redis restarting: the next sample reconnects
                    pass
                await asyncio.sleep(every_s)
        finally:
            await client.aclose()

    task = asyncio.create_task(sample())
    try:
        yield peak
    finally:
        done.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def run_scenario(tmp: Path, store_url: str | None, *, fault: str = "kill_delete", n_hosts: int = 24,
                       kill_after_pages: int = 20, timeout_s: float = 160.0, checkpoint_s: float = 0.5,
                       min_delay_s: float = 0.25, claim_idle_s: float = 5.0, pause_s: float = 4.0,
                       crawled_s: float | None = 0.0, victim_env: dict[str, str] | None = None,
                       member_ttl_s: float = 1.0, victim_first: bool = False, **web: Any) -> Outcome:
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
    params = small_web(n_hosts=n_hosts, **web)
    model = WebModel(params)
    async with TestWebServer(model) as srv, EmbeddedRedis(tmp / "redis") as redis:
        extra = {"shared_store": store_url} if store_url else {}
        config = cluster_config(params, tmp / "cfg", srv.write_resolve_file(tmp / "resolve.txt"), n_buckets=M,
                                min_delay_s=min_delay_s, checkpoint_s=checkpoint_s, claim_idle_s=claim_idle_s,
                                member_ttl_s=member_ttl_s, **extra)
        # a failed robots.txt is retried after error_retry_s, which the robots gate does not raise to the
        # politeness delay (crawl_config_for sets 0.01 s): make it the delay, politeness is measured here
        config = dataclasses.replace(config, robots=dataclasses.replace(config.robots, error_retry_s=min_delay_s))
        seeds = [srv.home_url(0), srv.home_url(3)]
        c = _cluster(tmp, redis, store_url, seeds, write_toml(config, tmp / "crawl.toml"))
        c.victim_env, c.victim_first = victim_env, victim_first
        fault_s = await _run(c, fault, (kill_after_pages, crawled_s), timeout_s, pause_s)
        async with asyncio.timeout(30):
            counters = await _counters(redis.url)
        records = list(srv.records)
    with (tmp / "server_records.jsonl").open("w") as out:  # for a second look at the figures
        out.writelines(json.dumps(r._asdict()) + "\n" for r in records)
    outcome = _outcome(c, fault, crawl_outcomes(model, seeds, config), counters)
    excused = gave_up([*c.victim, *(e for n in _alive(c, fault) for e in log_entries(c.log(n)))])
    manners = politeness(records, min_delay_s, excused)
    return dataclasses.replace(outcome, redis_peak_bytes=c.peak, at_once=manners.at_once,
                               short_gaps=manners.short_gaps, resends=manners.resends,
                               politeness_examples=manners.examples,
                               recover_s=recovery_s(records, fault_s))


def _cluster(tmp: Path, redis: EmbeddedRedis, store_url: str | None, seeds: list[str], toml: Path) -> _Cluster:
    outs = {n: tmp / f"out-{n}" for n in NODES}
    common = ["--redis", redis.url, "--crawl", CRAWL]
    args = {"a": ["crawl", *seeds, "--out", str(outs["a"]), "--config", str(toml), "--no-progress", *common,
                  "--node-id", "a"]}
    for n in NODES[1:]:
        args[n] = ["node", *common, "--out", str(outs[n]), "--node-id", n]
    return _Cluster(tmp, redis, open_store(store_url) if store_url else None, outs, args)


async def _run(c: _Cluster, fault: str, kill_point: tuple[int, float | None], timeout_s: float, pause_s: float) -> float:
    """Start the nodes, apply the fault, wait for every process; the fault's monotonic time."""
    async with _peak_sampler(c.redis.url) as peak:
        try:
            await c.start("a")
            await wait_defined(c.redis.url, timeout_s / 4)
            for n in NODES[1:]:
                await c.start(n)
                if c.victim_first and n == VICTIM:
                    await wait_in_table(c.redis.url, VICTIM, timeout_s / 4)
            if fault != "none":  # no fault: nothing to wait for (node b may own few hosts, or none, of a small web)
                await _wait_kill_point(c, *kill_point, timeout_s / 2)
            if c.victim_first:
                await wait_in_table(c.redis.url, VICTIM, timeout_s / 4, applied_with=NODES)
            fault_s, c.fault_wall = time.monotonic(), time.time()
            await _apply_fault(c, fault, pause_s, timeout_s / 4)
            async with asyncio.timeout(timeout_s / 2):
                for proc in list(c.procs.values()):
                    await proc.wait()
        finally:
            for proc in c.procs.values():
                if proc.returncode is None:
                    kill_tree(proc.pid)
                    await proc.wait()
    c.peak = peak[0]
    return fault_s


def _alive(c: _Cluster, fault: str) -> list[str]:
    return [n for n in NODES if n != VICTIM or fault != "kill_delete"]


def _outcome(c: _Cluster, fault: str, expected: Any, counters: dict[str, Any]) -> Outcome:
    want = {u for u in expected.fetched if expected.outcomes[u].status is not None}
    alive = _alive(c, fault)
    found, mismatch = archived_urls(c.tmp, c.store, [c.outs[n] for n in alive])
    logs = {n: log_entries(c.log(n)) for n in alive}
    if fault == "kill_delete":
        logs[VICTIM] = c.victim
    victim = final_entries(c.victim)
    every = [e for entries in logs.values() for e in entries]
    twice = fetched_twice(e for entries in logs.values() for e in final_entries(entries))
    attempted = {e["url"] for entries in logs.values() for e in entries}
    missing = sorted(want - found)
    wall = c.checkpoint_wall
    late = {e["url"] for e in victim if float(e["fetched_at"]) >= wall - BOUND_MARGIN_S or not c.store}
    return Outcome(
        closure=len(want), archived=len(want & found), missing=missing, refetched=len(twice), bound=len(late),
        outside_bound=sorted(twice - late), victim_after=len(final_entries(logs.get(VICTIM, []))) - len(victim),
        victim_pages=len(victim), exit_codes={n: p.returncode for n, p in c.procs.items()},
        unattempted=len(set(missing) - attempted), fault=fault,
        refetched_ages=sorted(round(float(e["fetched_at"]) - wall, 2) for e in victim if e["url"] in twice),
        counters=counters, cdxj_mismatch=mismatch, summaries=_summaries(c, alive), checkpoint_wall=wall,
        hosts_back_s=hosts_back_s(c.victim_hosts(), every, c.fault_wall) if fault in NODE_FAULTS else None)


def _summaries(c: _Cluster, nodes: list[str]) -> dict[str, dict[str, Any]]:
    paths = {n: c.outs[n] / "nodes" / n / "summary.json" for n in nodes}
    return {n: json.loads(p.read_text()) for n, p in paths.items() if p.exists()}


async def wait_defined(url: str, timeout_s: float) -> None:
    """Until the first node has stored the crawl's definition (a node cannot join before)."""
    from webgather.cluster import definition
    from webgather.cluster.redis import RedisBackend

    backend = await RedisBackend.connect(url, CRAWL, M)
    try:
        async with asyncio.timeout(timeout_s):
            while await definition.read(backend) is None:
                await asyncio.sleep(0.05)
    finally:
        await backend.aclose()


async def wait_in_table(url: str, node: str, timeout_s: float, applied_with: tuple[str, ...] = ()) -> None:
    """Until the crawl's bucket table names ``node`` (and ``applied_with``, and ``node``'s heartbeat
    says it applied that table: its hand-offs for it are sent)."""
    from webgather.cluster.redis import RedisBackend

    backend = await RedisBackend.connect(url, CRAWL, M)
    coord = backend.coordinator()
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                table = await coord.get_table()
                info = (await coord.members()).get(node, {}) if applied_with else {}
                if table is not None and {node, *applied_with} <= set(table.nodes) and (
                        not applied_with or (info.get("version") == table.version and info.get("applied"))):
                    return
                await asyncio.sleep(0.05)
    finally:
        await backend.aclose()


def _manifest_wall(store: SharedStore | None) -> float:
    raw = store.get_bytes(f"checkpoints/{VICTIM}/manifest.json") if store is not None else None
    return float(json.loads(raw)["wall"]) if raw else 0.0


async def _counters(url: str) -> dict[str, int]:
    """The crawl's counters (``recover.done.<node>``, ``restored_buckets``...)."""
    from webgather.cluster.redis import RedisBackend

    backend = await RedisBackend.connect(url, CRAWL, M)
    try:
        return await backend.coordinator().counters()
    finally:
        await backend.aclose()
