"""The one launcher: every path that runs a crawl node starts it here.

``crawl`` (one node on the in-process backend), ``crawl --redis``, each ``--workers``
process (a ``node``), ``node``, ``recrawl DIR``, ``crawl --continuous`` and the API's
``Crawl(...)`` all end in :func:`launch_node`: the node's config is the crawl's stored
definition plus this node's local settings (:mod:`webgather.config.local`), and nothing
else, so a setting that holds on one path holds on all of them. The node records the
local settings it ran with in its summary (``node_settings``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webgather.clock import Clock
from webgather.cluster.definition import CrawlDefinition
from webgather.cluster.transport import Backend
from webgather.config import CrawlConfig
from webgather.runtime.launch.cluster import run_cluster_node
from webgather.runtime.engine.page_hooks import HookFunctions

__all__ = ["SOLO_MEMBER_TTL_S", "launch_node", "node_config"]

SOLO_MEMBER_TTL_S = 365 * 86400.0
"""The membership lease of the only node: no other node could take its buckets, so a stall (swap, a
long GC, a loaded machine) must not fence its fetches (``runtime.member.fence``) for a beat."""


def node_config(found: CrawlDefinition, local: Mapping[str, Any], *, out: Path, solo: bool = False,
                progress: bool = False) -> CrawlConfig:
    """The config a node runs with: the crawl's definition, this node's ``local`` settings (dotted
    name -> value, None: not given), its output directory; ``solo``: the crawl's only node."""
    config = found.crawl_config(**{**local, "out_dir": str(out), "progress": progress})
    if solo:
        config = dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, member_ttl_s=SOLO_MEMBER_TTL_S))
    return config


async def launch_node(backend: Backend, found: CrawlDefinition, local: Mapping[str, Any], *, node_id: str,
                      out: Path, solo: bool = False, clock: Clock | None = None, progress: bool = False,
                      hooks: HookFunctions | None = None) -> dict[str, Any]:
    """Run node ``node_id`` of the crawl ``found`` until the crawl ends or the node leaves; its summary.

    It writes under ``out/nodes/<node_id>/``, or, ``solo`` (a one-node crawl), in ``out`` itself.
    Signals are handled (``runtime.engine.signals``): SIGTERM leaves, SIGINT stops keeping the state."""
    config = node_config(found, local, out=out, solo=solo, progress=progress)
    return await run_cluster_node(backend, config, node_id=node_id, nodes_dir=out / "nodes",
                                  node_dir=out if solo else None, epoch=found.epoch, clock=clock,
                                  handle_signals=True, progress=progress, hooks=hooks)
