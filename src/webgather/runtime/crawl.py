"""Run a crawl on this machine to the end and write its summary: what ``webgather crawl`` calls.

Seeds are kept in ``DIR/seeds.txt`` so a resumed crawl (same ``--out``) knows
its seed hosts (the scope) even when the command names no seeds again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webgather.clock import Clock, SystemClock
from webgather.cluster.inprocess import InProcessHub
from webgather.config import CrawlConfig
from webgather.errors import StoreError
from webgather.runtime.cluster_crawl import run_cluster_node, start_crawl
from webgather.runtime.cluster_permits import COUNTER as PERMITS
from webgather.store.outdir import merge_seeds
from webgather.store.summary import read_summary

__all__ = ["run_crawl"]


async def run_crawl(
    config: CrawlConfig,
    seeds: Sequence[str],
    *,
    node_id: str = "n0",
    clock: Clock | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Crawl from ``seeds`` into ``config.out_dir`` until done; return the summary.

    The one run path: this is one cluster node (:func:`~webgather.runtime.cluster_crawl.run_cluster_node`)
    on the in-process backend, owning every bucket, writing in ``config.out_dir`` itself. A failed
    write (disk full) stops the crawl: the summary says so (``write_failed``, ``finished`` false)
    if it can still be written, and the :class:`WriteFailed` is raised."""
    out_dir = Path(config.out_dir)
    all_seeds = merge_seeds(out_dir, seeds)
    clock = clock or SystemClock()
    config = dataclasses.replace(config, seeds=tuple(all_seeds))
    hub = InProcessHub(config.cluster.n_buckets, clock)
    found = await start_crawl(hub, config, all_seeds, nodes=[node_id], epoch=clock.wall())
    if config.max_pages is not None:  # crawl-wide, as in a cluster: earlier runs' pages hold their permits
        await hub.coordinator().incr(PERMITS, min(config.max_pages, _pages_so_far(out_dir)))
    return await run_cluster_node(hub, config, node_id=node_id, nodes_dir=out_dir / "nodes", node_dir=out_dir,
                                  epoch=found.epoch, clock=clock, handle_signals=True, progress=progress)


def _pages_so_far(out_dir: Path) -> int:
    """Pages of the crawl's earlier runs, as its ``summary.json`` counts them (0 for a new crawl)."""
    try:
        return int(read_summary(out_dir).get("pages") or 0)
    except StoreError:
        return 0
