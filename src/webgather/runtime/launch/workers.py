"""``webgather crawl --workers N``: N node processes on this machine, and the merged summary.

The parent process is not a crawl node. It starts an embedded Redis under
``DIR/redis`` (unless ``--redis URL`` names one), starts the crawl
(:func:`~webgather.runtime.launch.cluster.start_crawl`: definition, a version-0
table over ``w0..w{N-1}`` so no hand-off is needed at start, seeds), then runs
``python -m webgather node ... --node-id wK`` N times, each writing under
``DIR/nodes/wK/`` (its log in ``node.log``). It waits for them all; a worker
that dies is not restarted: the others take its buckets (see
``runtime.durability.recovery``). Ctrl-C (SIGINT) is passed on to every worker,
which stop keeping their state: the same command resumes the crawl. An
embedded Redis that dies is started again from its data (the workers pause
meanwhile; ``runtime.member.node``). At the
end it merges the workers' summaries into ``DIR/summary.json`` (load balance
per interval, cross-URL traffic; :mod:`webgather.cluster.status`) and stops
the embedded Redis.

Re-crawl (``cycles``: ``webgather recrawl DIR`` on such a directory, or
``crawl --workers N --continuous``): each cycle is one run of the crawl started
with :func:`~webgather.runtime.launch.cluster.start_cycle` (the unfinished cycle
if a kill interrupted one), with N fresh worker processes (``node --once``)
that take part in it; the merged summary gets the cycle's ``recrawl`` section.
A continuous crawl starts the next cycle a cycle length after the last one
started, with the same embedded Redis.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any, Protocol

from webgather.cluster import definition as definitions
from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.redis import RedisBackend
from webgather.cluster.status import merge_summaries
from webgather.config import REDIS_URL_ENV, CrawlConfig
from webgather.errors import BackendUnavailable, ClusterError
from webgather.clock import SystemClock
from webgather.runtime.launch.cluster import start_crawl, start_cycle
from webgather.runtime.launch.forked import ForkedCommand, can_fork, preload
from webgather.store.crawllog import read_crawl_log
from webgather.runtime.durability.losses import loss_text
from webgather.runtime.metrics.node import worker_metrics
from webgather.runtime.engine.affinity import allowed_cpus, worker_pins
from webgather.store.summary import read_summary, write_summary
from webgather.logs import child_args

__all__ = ["DEFAULT_CRAWL", "Cycles", "node_command", "run_workers", "worker_env"]
_log = logging.getLogger(__name__)

DEFAULT_CRAWL = "crawl"
POLL_S = 0.1
STOP_TIMEOUT_S = 30.0
"""After Ctrl-C, workers get this long to stop before they are killed."""


def node_command(crawl: str, out: Path, node: str, extra: Sequence[str] = ()) -> list[str]:
    """A worker's argv. The Redis URL is not in it (anyone may read argv with ``ps``, and the
    URL may hold a password): it goes in the worker's environment, see :func:`worker_env`."""
    return [sys.executable, "-m", "webgather", "node", "--crawl", crawl, "--out", str(out), "--node-id", node,
            *child_args(), *extra]  # the level and format of this process's logging (webgather.logs)


def worker_env(url: str) -> dict[str, str]:
    """This process's environment plus the Redis URL, for the workers (``/proc/PID/environ`` is owner-only)."""
    return {**os.environ, REDIS_URL_ENV: url}


@dataclass(frozen=True)
class Cycles:
    """Run the crawl as re-crawl cycles: one (``recrawl DIR``), or one per cycle length (``--continuous``)."""

    continuous: bool = False
    max_cycles: int | None = None
    on_cycle: Callable[[dict[str, Any]], object] | None = None
    sleep: Callable[[float], object] = time.sleep
    stored_settings: bool = False
    """Take the crawl's settings from its stored definition, only ``recrawl`` from the config given
    (``webgather recrawl DIR``: the directory's crawl is what it is)."""


async def _start(url: str, crawl: str, config: CrawlConfig, seeds: Sequence[str], nodes: list[str],
                 cycles: Cycles | None) -> tuple[float, float | None, CrawlConfig]:
    """Start a run (or a cycle); its epoch, for a cycle when the next one is due, and the crawl's config."""
    backend = await RedisBackend.connect(url, crawl, config.cluster.n_buckets)
    try:
        if cycles is None:
            found = await start_crawl(backend, config, seeds, nodes=nodes)
            definitions.save(config.out_dir, found)  # what recrawl DIR and a resume read
            return found.epoch, None, config
        if cycles.stored_settings:
            backend, config = await _stored_config(backend, url, crawl, config)
        spec, found = await start_cycle(backend, config, seeds, nodes=nodes, continuous=cycles.continuous,
                                        wall=SystemClock().wall())
        definitions.save(config.out_dir, found)
        return found.epoch, spec.started_s + float(spec.recrawl["cycle_s"]), config
    finally:
        await backend.aclose()


async def _stored_config(backend: RedisBackend, url: str, crawl: str,
                         config: CrawlConfig) -> tuple[RedisBackend, CrawlConfig]:
    found = await definitions.read(backend)
    if found is None:
        raise ClusterError(f"no cluster crawl named {crawl!r} in that Redis (a crawl made with --workers "
                           "or --redis keeps one; give --redis URL --crawl NAME if it was not embedded)")
    if found.n_buckets != backend.n_buckets:
        await backend.aclose()
        backend = await RedisBackend.connect(url, crawl, found.n_buckets)
    stored = found.crawl_config(out_dir=config.out_dir, progress=False)
    return backend, dataclasses.replace(stored, recrawl=config.recrawl)


async def _finished(url: str, crawl: str, n_buckets: int) -> tuple[bool, dict[str, int]]:
    backend = await RedisBackend.connect(url, crawl, n_buckets)
    try:
        counters = await backend.coordinator().counters()
    finally:
        await backend.aclose()
    return counters.get("done", 0) >= counters.get("runs", 1), counters


def run_workers(config: CrawlConfig, seeds: Sequence[str], *, workers: int, redis_url: str | None,
                crawl: str | None, node_args: Sequence[str] = (), cycles: Cycles | None = None,
                env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run the crawl with ``workers`` local node processes (``cycles``: as re-crawl cycles);
    returns the (last) merged summary. ``env``: more environment for the workers (the Python API's
    ``PYTHONPATH``, so they import the hooks module its caller imported)."""
    if workers < 1:
        raise ClusterError("--workers must be at least 1")
    worker_metrics(config.metrics, workers - 1)  # the last worker's port fits, before anything starts
    if redis_url is not None and not crawl:
        raise ClusterError("--redis needs --crawl NAME (the crawl's name in that Redis)")
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    server = EmbeddedRedis(out / "redis") if redis_url is None else None
    url = server.start() if server is not None else str(redis_url)
    run = _Run(url, crawl or DEFAULT_CRAWL, config, [f"w{i}" for i in range(workers)],
               [*node_args, *(["--once"] if cycles is not None else [])], server, dict(env or {}))
    try:
        if cycles is None:
            return run.once(seeds, None)[0]
        count = 0
        while True:
            merged, next_at = run.once(seeds if count == 0 else (), cycles)
            count += 1
            if cycles.on_cycle is not None:
                cycles.on_cycle(merged)
            if not cycles.continuous or not merged["finished"] or merged["interrupted"] \
                    or (cycles.max_cycles and count >= cycles.max_cycles):
                return merged
            cycles.sleep(max(0.0, (next_at or 0.0) - SystemClock().wall()))
    finally:
        if server is not None:
            server.stop()


@dataclass(frozen=True)
class _Run:
    url: str
    name: str
    config: CrawlConfig
    nodes: list[str]
    node_args: list[str]
    server: EmbeddedRedis | None
    """The embedded Redis (None: ``--redis URL``), restarted from its data if it dies."""
    env: dict[str, str]

    def once(self, seeds: Sequence[str], cycles: Cycles | None) -> tuple[dict[str, Any], float | None]:
        """One run of the crawl (a cycle, with ``cycles``) by the worker processes; the merged summary."""
        import uvloop

        config, out, nodes, clock = self.config, Path(self.config.out_dir), self.nodes, SystemClock()
        _restart_if_dead(self.server)  # it may have died between two cycles
        epoch, next_at, config = uvloop.run(_start(self.url, self.name, config, seeds, nodes, cycles))
        if cycles is not None:  # a node that dies this cycle must not be summed with its last cycle's figures
            for node in nodes:
                (out / "nodes" / node / "summary.json").unlink(missing_ok=True)
        t0 = clock.monotonic()
        # worker i on the i-th CPU: auto-pinned workers could pick the same one
        pin = worker_pins(len(nodes), config.pin_cpu, allowed_cpus())
        metrics = [worker_metrics(self.config.metrics, k) for k in range(len(nodes))]  # wK on PORT+K
        commands = [node_command(self.name, out, node, [*self.node_args, "--pin-cpu", cpu,
                                                        *(["--metrics", m] if m is not None else [])])
                    for node, cpu, m in zip(nodes, pin, metrics, strict=True)]
        codes, interrupted = _run_processes(commands, out, nodes, supervise=lambda: _restart_if_dead(self.server),
                                            env={**worker_env(self.url), **self.env})
        wall_s, error = clock.monotonic() - t0, ""
        try:
            finished, counters = uvloop.run(_finished(self.url, self.name, config.cluster.n_buckets))
        except BackendUnavailable as exc:  # the workers said so in their logs; the summary says it too
            finished, counters, error = False, {}, str(exc)
        summaries = [_node_summary(out / "nodes" / node, node, epoch, config.cluster.interval_s) for node in nodes]
        if cycles is None:  # a crawl ended by its --max-pages is not finished, as on one node (a died node's
            finished = finished and all(s.get("finished", True) for s in summaries)  # buckets went to others)
        merged = merge_summaries(summaries, wall_s=wall_s, finished=finished)
        run_errors: Counter[str] = Counter()
        for each in summaries:  # this run's (a cycle's) errors, beside the crawl's totals
            run_errors.update(each.get("run_errors") or {})
        merged["run_errors"] = dict(sorted(run_errors.items()))
        merged.update({"workers": len(nodes), "exit_codes": dict(zip(nodes, codes, strict=True)),
                       "backend_error": error, "redis_cpu_s": self.server.cpu_s() if self.server else None,
                       "counters": {k: v for k, v in counters.items() if not k.startswith(("recover.", "alive."))},
                       "losses": loss_text(counters), "interrupted": interrupted})
        write_summary(out, merged)
        return merged, next_at


def _node_summary(node_dir: Path, node: str, epoch: float, interval_s: float) -> dict[str, Any]:
    """The node's summary.json, or for a node that died without one, figures from its crawl log."""
    if (node_dir / "summary.json").exists():
        return read_summary(node_dir)
    per_interval: Counter[int] = Counter()
    pages = 0
    log = node_dir / "crawl.log.jsonl"
    for entry in read_crawl_log(log) if log.exists() else ():
        if entry.get("kind") in ("page", "sitemap") and not entry.get("retry") \
                and entry.get("error") not in ("robots", "robots_unavailable", "off_scope"):
            pages += 1
            per_interval[int((float(entry["fetched_at"]) - epoch) // interval_s)] += 1
    top = max(per_interval, default=-1)
    return {"node": node, "pages": pages, "end": "died (figures from its crawl log)", "interval_s": interval_s,
            "pages_per_interval": [per_interval.get(i, 0) for i in range(top + 1)]}


def _restart_if_dead(server: EmbeddedRedis | None) -> None:
    """An embedded Redis that died (crash, OOM kill) is started again from its AOF: the
    workers pause while it is away (see ``cluster.max_outage_s``) and resume."""
    if server is None or server.running or server.failed:
        return
    _log.warning("webgather: the embedded Redis exited; restarting it from its data")
    try:
        server.restart()
    except ClusterError as exc:  # once (server.failed): the workers stop after max_outage_s, keeping their state
        _log.error(f"webgather: cannot restart the embedded Redis: {exc}")


class _Process(Protocol):
    """A running worker: a ``subprocess.Popen`` or a :class:`~webgather.runtime.launch.forked.ForkedCommand`."""

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...

    def send_signal(self, signum: int) -> None: ...

    def kill(self) -> None: ...


def _run_processes(commands: list[list[str]], out: Path, nodes: list[str], supervise: Callable[[], None] = lambda: None,
                   env: dict[str, str] | None = None) -> tuple[list[int | None], bool]:
    """Run the workers to their end; their exit codes, and whether a signal (Ctrl-C) stopped them
    (passed on to each as SIGINT: they stop keeping their state, and their summaries are merged as usual).
    From a process with one thread each worker is forked from this one (:mod:`~webgather.runtime.launch.forked`:
    it imports nothing); otherwise it is ``python -m webgather node`` in a new interpreter."""
    procs: list[_Process] = []
    logs: list[IO[bytes]] = []
    interrupted = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        interrupted.append(signum)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)

    fork = can_fork()
    # only the main thread may set handlers (the Python API runs this in a thread under run_async):
    # elsewhere a terminal's Ctrl-C reaches the workers of its process group itself
    in_main = threading.current_thread() is threading.main_thread()
    old = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)} if in_main else {}
    try:
        for command, node in zip(commands, nodes, strict=True):
            node_dir = out / "nodes" / node
            node_dir.mkdir(parents=True, exist_ok=True)
            log = (node_dir / "node.log").open("ab")
            procs.append(_start_worker(command, log, env, node, logs, fork))
            logs.append(log)
        _wait_processes(procs, interrupted, supervise)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for each in logs:
            each.close()
    return [p.returncode for p in procs], bool(interrupted)


def _start_worker(command: list[str], log: IO[bytes], env: dict[str, str] | None, node: str,
                  others: list[IO[bytes]], fork: bool) -> _Process:
    """``command`` (a :func:`node_command`): in a child forked from this process, or a new interpreter."""
    if not fork:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    prefix = [sys.executable, "-m", "webgather"]
    if command[:3] != prefix:
        raise ClusterError(f"not a webgather command: {command[:3]}")
    preload()
    return ForkedCommand(command[3:], log, env if env is not None else dict(os.environ), f"wg-{node}", others)


def _wait_processes(procs: list[_Process], interrupted: list[int],
                    supervise: Callable[[], None]) -> None:
    """Until every worker has exited, or STOP_TIMEOUT_S after an interrupt (the caller kills the rest)."""
    stop_by = None
    while any(p.poll() is None for p in procs):
        time.sleep(POLL_S)
        if not interrupted:
            supervise()
        elif stop_by is None:
            stop_by = STOP_TIMEOUT_S / POLL_S
        else:
            stop_by -= 1
            if stop_by <= 0:
                return
