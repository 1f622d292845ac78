"""The nemesis's cluster: N ``webgather`` node processes (each its own --out, its own proxied link to
Redis), and the fault drivers that act on them, on Redis and on the store.

Node ``n0`` starts the crawl (``webgather crawl SEEDS --redis ... --config``), the others join
(``webgather node``); joiners of a schedule are ``j1``, ``j2``... A process is one *run* of a node
(a restart with the same --out is a new run of the same node). Every run's output (stdout and stderr)
goes to ``logs/<node>.<k>.log``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cluster_process_helpers import children, kill_tree
from durability_helpers import CRAWL
from nemesis_proxy import LinkProxy
from nemesis_schedule import Fault
from nemesis_services import RedisService

FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
CLOCK_RATE = 0.5
"""A slow node's clocks advance this many seconds per real second."""
SLOW_CLOCK = f"+0 x{CLOCK_RATE}"
TERM_WAIT_S = 30.0
"""A node sent SIGTERM that has not exited after this long is killed (and counted as a hang)."""


class Store(Protocol):
    kind: str
    url: str
    env: dict[str, str]

    async def fault(self, kind: str) -> None: ...
    async def heal(self, kind: str) -> None: ...


@dataclass
class Run:
    """One process of a node."""

    node: str
    index: int
    proc: asyncio.subprocess.Process
    log: Path
    slow_clock: bool = False
    started_wall: float = 0.0
    killed: bool = False
    """Ended by the nemesis's kill -9 (its exit code is not the node's to choose)."""

    @property
    def code(self) -> int | None:
        return self.proc.returncode

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class Applied:
    """A fault as it happened (monotonic and wall times of its start and heal)."""

    fault: Fault
    at: float
    wall: float
    healed: float | None = None
    note: str = ""


@dataclass
class Cluster:
    work: Path
    redis: RedisService
    store: Store
    toml: Path
    seeds: list[str]
    runs: list[Run] = field(default_factory=list)
    proxies: dict[str, LinkProxy] = field(default_factory=dict)
    lost_disks: dict[str, list[Path]] = field(default_factory=dict)
    """Node -> copies of its crawl logs as they were when its --out was deleted."""
    applied: list[Applied] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What the drivers saw go wrong (a SIGTERM not honoured...)."""
    hung: list[str] = field(default_factory=list)
    """Runs still going at the deadline (``node.index``)."""
    ended_at: float = 0.0
    """Monotonic time the last run was seen to exit (while :meth:`finish` watched)."""

    def out(self, node: str) -> Path:
        return self.work / f"out-{node}"

    def current(self, node: str) -> Run | None:
        found = [r for r in self.runs if r.node == node]
        return found[-1] if found else None

    def running(self) -> list[Run]:
        return [r for r in self.runs if r.code is None]

    def nodes(self) -> list[str]:
        return sorted({r.node for r in self.runs})

    async def start(self, node: str, *, first: bool = False, slow_clock: bool = False) -> Run:
        proxy = self.proxies.get(node)
        if proxy is None:
            proxy = self.proxies[node] = LinkProxy("127.0.0.1", self.redis.port)
            await proxy.start()
        common = ["--redis", f"redis://{proxy.url_host}", "--crawl", CRAWL, "--out", str(self.out(node)),
                  "--node-id", node]
        args = ["crawl", *self.seeds, "--config", str(self.toml), "--no-progress", *common] if first \
            else ["node", *common, "--shared-store", self.store.url]
        env = {**os.environ, **self.store.env}
        if slow_clock:
            if not FAKETIME_LIB.exists():
                raise RuntimeError(f"a slow clock needs libfaketime ({FAKETIME_LIB}): apt-get install faketime")
            env.update(LD_PRELOAD=str(FAKETIME_LIB), FAKETIME=SLOW_CLOCK, FAKETIME_DONT_RESET="1")
        index = sum(1 for r in self.runs if r.node == node)
        log = self.work / "logs" / f"{node}.{index}.log"
        log.parent.mkdir(exist_ok=True)
        with log.open("ab") as handle:
            proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args, stdout=handle,
                                                        stderr=asyncio.subprocess.STDOUT, env=env)
        run = Run(node, index, proc, log, slow_clock, time.time())
        self.runs.append(run)
        return run

    async def play(self, fault: Fault, t0: float) -> None:
        """Wait for the fault's moment, apply it, and (if it lasts) heal it."""
        await asyncio.sleep(max(0.0, t0 + fault.at_s - time.monotonic()))
        applied = Applied(fault, time.monotonic(), time.time())
        self.applied.append(applied)
        heal = await self._apply(fault, applied)
        if fault.duration_s:
            await asyncio.sleep(max(0.0, applied.at + fault.duration_s - time.monotonic()))
            if heal is not None:
                await heal
            applied.healed = time.monotonic()
        else:
            applied.healed = applied.at

    async def _apply(self, fault: Fault, applied: Applied) -> Any:
        """Apply ``fault``; the coroutine that heals it (or None)."""
        kind, node = fault.kind, fault.target or ""
        if kind in ("join", "join_slow"):
            await self.start(node, slow_clock=kind == "join_slow")
            return None
        if kind.startswith("redis_"):
            return await self._redis(kind)
        if kind.startswith("store_"):
            await self.store.fault(kind)
            return self.store.heal(kind)
        if kind.startswith("cut_"):
            self.proxies[node].cut("closed" if kind == "cut_closed" else "blackhole")
            return _call(self.proxies[node].heal)
        run = self.current(node)
        if run is None or run.code is not None:
            applied.note = f"{node} had already exited ({None if run is None else run.code})"
            return None
        return await self._node_fault(kind, node, run, applied)

    async def _node_fault(self, kind: str, node: str, run: Run, applied: Applied) -> Any:
        if kind in ("kill9_disk", "kill9_keep"):
            run.killed = True
            kill_tree(run.proc.pid)
            await run.proc.wait()
            if kind == "kill9_disk":
                self._lose_disk(node)
                return None
            return self._restart(node, run.slow_clock)
        if kind == "stop":
            tree = [run.proc.pid, *children(run.proc.pid)]
            _signal_all(tree, signal.SIGSTOP)
            return _call(_signal_all, tree, signal.SIGCONT)
        if kind == "term_restart":
            os.kill(run.proc.pid, signal.SIGTERM)
            return self._after_term(node, run, applied)
        raise ValueError(f"unknown fault {kind!r}")

    async def _after_term(self, node: str, run: Run, applied: Applied) -> None:
        try:
            async with asyncio.timeout(TERM_WAIT_S):
                await run.proc.wait()
        except TimeoutError:
            self.problems.append(f"{node} did not exit within {TERM_WAIT_S:.0f} s of SIGTERM (killed)")
            run.killed = True
            kill_tree(run.proc.pid)
            await run.proc.wait()
        await self._restart(node, run.slow_clock)

    async def _restart(self, node: str, slow_clock: bool) -> None:
        await self.start(node, slow_clock=slow_clock)

    def _lose_disk(self, node: str) -> None:
        keep = self.work / "lost" / node
        keep.mkdir(parents=True, exist_ok=True)
        logs = sorted(self.out(node).glob("nodes/*/crawl.log.jsonl"))
        for k, log in enumerate(logs):
            copy = keep / f"crawl.{len(self.lost_disks.get(node, []))}.{k}.jsonl"
            shutil.copyfile(log, copy)
            self.lost_disks.setdefault(node, []).append(copy)
        shutil.rmtree(self.out(node), ignore_errors=True)

    async def _redis(self, kind: str) -> Any:
        if kind == "redis_flushall":
            await self.redis.flushall()
            return None
        await self.redis.kill(forget=kind == "redis_empty")
        return self.redis.restart()

    async def finish(self, deadline: float) -> list[Run]:
        """Wait for every run until ``deadline`` (monotonic); the runs still going then (hung), which are
        sent SIGTERM, then killed 10 s later."""
        self.ended_at = time.monotonic()
        while self.running() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            self.ended_at = time.monotonic()
        hung = self.running()
        for run in hung:
            os.kill(run.proc.pid, signal.SIGTERM)
        await self.kill_all(10.0)
        return hung

    async def kill_all(self, grace_s: float = 0.0) -> None:
        end = time.monotonic() + grace_s
        while self.running() and time.monotonic() < end:
            await asyncio.sleep(0.1)
        for run in self.running():
            with_tree = [run.proc.pid, *children(run.proc.pid)]
            _signal_all(with_tree, signal.SIGCONT)
            run.killed = True
            kill_tree(run.proc.pid)
            await run.proc.wait()
        for proxy in self.proxies.values():
            await proxy.close()


async def _call(function: Any, *args: Any) -> None:
    function(*args)


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
