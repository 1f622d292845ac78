"""Run one node's crawl to the end and write its summary: what ``webgather crawl`` calls.

Seeds are kept in ``DIR/seeds.txt`` so a resumed crawl (same ``--out``) knows
its seed hosts (the scope) even when the command names no seeds again.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webgather.config import CrawlConfig
from webgather.errors import SeedError, StoreError, WriteFailed
from webgather.clock import Clock, SystemClock
from webgather.runtime.metrics import serve_metrics
from webgather.runtime.node import CrawlNode
from webgather.runtime.parts import NodeParts, open_parts
from webgather.runtime.progress import Progress
from webgather.store.summary import write_summary

__all__ = ["merge_seeds", "run_crawl"]

SEEDS_FILE = "seeds.txt"


def merge_seeds(out_dir: Path, seeds: Sequence[str]) -> list[str]:
    """Seeds of this run plus those of earlier runs in ``out_dir``; saved back."""
    path = out_dir / SEEDS_FILE
    try:
        known = path.read_text().split() if path.exists() else []
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    merged = list(dict.fromkeys([*known, *seeds]))
    if not merged:
        raise SeedError(f"no seeds given and {path} does not exist: name at least one seed URL")
    if merged == known:
        return merged  # a resume with the same seeds writes nothing (the disk may be full)
    tmp = path.with_suffix(".tmp")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text("\n".join(merged) + "\n")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise WriteFailed.from_os(f"cannot write {path}", exc) from exc
    return merged


async def run_crawl(
    config: CrawlConfig,
    seeds: Sequence[str],
    *,
    node_id: str = "n0",
    clock: Clock | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Crawl from ``seeds`` into ``config.out_dir`` until done; return the summary.

    A failed write (disk full) stops the crawl: the summary says so
    (``write_failed``, ``finished`` false) if it can still be written, and the
    :class:`WriteFailed` is raised."""
    out_dir = Path(config.out_dir)
    all_seeds = merge_seeds(out_dir, seeds)
    clock = clock or SystemClock()
    cpu0, wall0 = time.process_time(), clock.monotonic()
    summary: dict[str, Any] = {}
    try:
        async with open_parts(config, out_dir, node_id=node_id, clock=clock, seeds=all_seeds) as parts:
            try:
                async with serve_metrics(config.metrics, parts):
                    await _run_node(parts, all_seeds, progress)
            finally:  # stopped by a failed write too: the summary counts what was stored
                summary = _summary(parts.stats.as_dict(), parts.frontier.stats(), clock.monotonic() - wall0,
                                   time.process_time() - cpu0)
                summary.update(seeds=len(all_seeds), node=node_id, finished=parts.frontier.is_done())
    except WriteFailed as exc:
        if summary:
            summary.update(finished=False, write_failed=str(exc))
            with contextlib.suppress(StoreError):  # the disk may still be full
                write_summary(out_dir, summary)
        raise
    write_summary(out_dir, summary)
    return summary


async def _run_node(parts: NodeParts, seeds: list[str], progress: bool) -> None:
    node = CrawlNode(parts)
    node.add_seeds(seeds)
    display = Progress(parts.stats, parts.frontier.stats, parts.clock.monotonic, enabled=progress)
    async with asyncio.TaskGroup() as group:
        shown = group.create_task(display.run())
        try:
            await node.run()
        finally:
            shown.cancel()


def _summary(stats: dict[str, Any], frontier: dict[str, int | float], wall_s: float, cpu_s: float) -> dict[str, Any]:
    pages = int(stats["pages"])
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        **stats,
        "frontier": frontier,
        "wall_s": round(wall_s, 3),
        "cpu_s": round(cpu_s, 3),
        "pages_per_s": round(pages / wall_s, 1) if wall_s > 0 else 0.0,
        "cpu_ms_per_page": round(1000 * cpu_s / pages, 3) if pages else None,
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }

