"""Helpers for the cluster tests that run ``webgather`` as child processes: find and end them by PID."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and its descendants (a test that failed midway)."""
    for each in [*children(pid), pid]:
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def start_webgather(*args: str) -> asyncio.subprocess.Process:
    """``python -m webgather ARGS`` with stdout and stderr in one pipe (PYTHONPATH is inherited)."""
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)


async def finish(proc: asyncio.subprocess.Process, timeout_s: float) -> tuple[int, str]:
    """Wait for ``proc`` (killing its tree on timeout); its exit code and output."""
    return await finish_sampling(proc, timeout_s, None)


async def finish_sampling(proc: asyncio.subprocess.Process, timeout_s: float, sample: Callable[[], None] | None,
                          every_s: float = 0.05) -> tuple[int, str]:
    """:func:`finish`, calling ``sample()`` every ``every_s`` while ``proc`` runs (to watch its children)."""
    try:
        async with asyncio.timeout(timeout_s):
            waiter = asyncio.ensure_future(proc.communicate())
            while sample is not None and not waiter.done():
                sample()
                await asyncio.sleep(every_s)
            output, _ = await waiter
    finally:
        if proc.returncode is None:
            kill_tree(proc.pid)
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, output.decode(errors="replace")


def final_fetches(out: Path) -> int:
    """Final page fetches so far in every node's crawl log (the last line may be partial)."""
    total = 0
    for log in out.glob("nodes/*/crawl.log.jsonl"):
        lines = log.read_text().splitlines()[:-1]
        total += sum(1 for e in map(json.loads, lines) if e.get("kind") == "page" and not e.get("retry")
                     and e.get("error") not in ("robots", "robots_unavailable", "off_scope"))
    return total
