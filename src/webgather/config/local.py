"""A node's local settings: what each node of a crawl sets for itself, on every path alike.

A crawl's definition (:mod:`webgather.cluster.definition`) holds what every node must
agree on; the settings here are outside it: each node takes them from its own layers,
defaults < ``--config`` file < ``WEBGATHER_*`` environment < flags, whichever way it
starts (``crawl``, ``crawl --redis``, ``--workers``, ``node``, ``recrawl``,
``--continuous``, the API). The node writes their values into its summary
(``node_settings``), so what it ran with can be read back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webgather.config import CrawlConfig, layers
from webgather.errors import ConfigError

__all__ = ["LOCAL_KEYS", "NODE_KEYS", "OVERRIDE_KEYS", "local_layers", "local_of"]

NODE_KEYS = ("fetch.concurrency", "pin_cpu", "fetch.source_address", "metrics")
"""Settings of one node (``fetch.concurrency``: requests in flight at this node, robots.txt included)."""
OVERRIDE_KEYS = ("fetch.proxy", "hooks.items")
"""The crawl's settings a node may set over the crawl's for itself (its proxy, where its items go)."""
LOCAL_KEYS = ("out_dir", "progress", "seeds", *NODE_KEYS)
"""What a crawl's definition leaves out: the node's own settings, where it writes, its display, the seeds
(stored beside the definition)."""


def local_of(config: CrawlConfig) -> dict[str, Any]:
    """The node settings and overrides ``config`` holds (dotted name -> value), as a summary records them."""
    flat = {f"{section}.{f.name}": getattr(getattr(config, section), f.name)
            for section in ("fetch", "hooks") for f in dataclasses.fields(getattr(config, section))}
    flat.update(pin_cpu=config.pin_cpu, metrics=config.metrics)
    return {key: flat[key] for key in (*NODE_KEYS, *OVERRIDE_KEYS)}


def local_layers(file: str | Path | None, env: Mapping[str, str] | None,
                 cli: Mapping[str, Any]) -> dict[str, Any]:
    """This node's settings from its layers (file < env < flags; ``env`` None: ``os.environ``),
    dotted name -> value, only those given. The crawl's other settings come from its definition:
    one in the file is refused in one line; one in the environment is the crawl's starter's
    (``--workers`` passes its environment on) and is left to the definition."""
    merged: dict[str, Any] = {}
    for source, layer in layers(file, env, cli):
        if source == "file":
            foreign = sorted(k for k in layer if k not in (*NODE_KEYS, *OVERRIDE_KEYS))
            if foreign:
                raise ConfigError(f"config file {file}: {', '.join(foreign)} belong to the crawl's definition "
                                  f"(set where the crawl starts); a node's file sets only "
                                  f"{', '.join((*NODE_KEYS, *OVERRIDE_KEYS))}")
        merged.update({k: v for k, v in layer.items() if k in (*NODE_KEYS, *OVERRIDE_KEYS)})
    return merged
