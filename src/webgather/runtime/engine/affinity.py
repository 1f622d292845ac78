"""Keeping a node's threads on one CPU: the IO shell over ``sched_setaffinity``.

Why: a node is one event-loop thread plus the archive writer's thread, sharing
the GIL. On two cores every hand-off of the GIL between them is a wake-up
across cores (and the writer grabs the GIL whenever the loop's C calls release
it: lexbor's parse, every ada join through cffi); on one core it is a cheap
switch. Measured on the vs_scrapy web (2 cores, nginx on loopback, medians of
3 interleaved crawls): 1.88 -> 1.35 ms CPU a page, 593 -> 735 pages/s. The
one-thread lean loop gains nothing from it; the writer loses the parallel
gzip, which costs less than the hand-offs did.

On Linux the mask of thread 0 (the caller) is set, and threads started later
inherit it: pin before the writer starts. The old mask comes back on exit, so
a test process that runs nodes in-process is not left pinned.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["allowed_cpus", "pinned", "worker_pins"]


@contextlib.contextmanager
def pinned(choice: str) -> Iterator[int | None]:
    """Pin the calling thread (and the threads it starts) to one CPU while the block runs.

    ``choice``: "auto" (the CPU this thread runs on now), "off", or "N" (the N-th
    allowed CPU modulo their count). Yields the CPU, or None where nothing was pinned
    (off, one allowed CPU, no affinity support)."""
    cpu = _choose(choice)
    if cpu is None:
        yield None
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, before)


def allowed_cpus() -> frozenset[int] | None:
    """The CPUs the calling thread may run on now, or None without affinity support."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return frozenset(os.sched_getaffinity(0))


def worker_pins(workers: int, choice: str, allowed: frozenset[int] | None) -> list[str]:
    """``--pin-cpu`` of each of ``workers`` local node processes: "off" for all, else worker i on
    CPU index i round robin over the allowed CPUs (a node refuses an index past them)."""
    if choice == "off":
        return ["off"] * workers
    return [str(i % max(1, len(allowed or ()))) for i in range(workers)]


def _choose(choice: str) -> int | None:
    if choice == "off" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    if choice == "auto":
        cpu = _current_cpu()
        return cpu if cpu in allowed else allowed[0]
    return allowed[int(choice) % len(allowed)]


def _current_cpu() -> int | None:
    """Field 39 ("processor") of /proc/thread-self/stat: the CPU the thread last ran on."""
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[36])
    except (OSError, ValueError, IndexError):
        return None
