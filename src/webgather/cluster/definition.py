"""A crawl's definition, stored once in the backend so that a joining node needs only its name.

The definition is what every node must agree on to crawl the same set: the
config sections that decide what is fetched and how it is partitioned, the
seeds (the scope of a ``seed-hosts`` crawl depends on them), M, the partition
key, and the crawl's epoch (wall time of its start: load-balance intervals
count from it on every node). ``webgather crawl`` stores it; ``webgather
node --crawl NAME`` reads it and takes its settings from it, so nodes cannot
disagree; a node that names a different M is refused with a one-line error.

Per-node settings stay local (:mod:`webgather.config.local`): ``out_dir``, ``progress``, ``fetch.concurrency``,
``pin_cpu``, ``fetch.source_address``, ``metrics``; each node takes them from its own layers.
``max_pages`` is the crawl's (crawl-wide: :mod:`webgather.runtime.member.permits`);
it limits the crawl, not its re-crawl cycles (a cycle's nodes run without it:
the cycle's budget limits them, :mod:`webgather.runtime.member.budget`).
Re-crawl settings (``recrawl.*``) are not part of it: each re-crawl cycle has
its own (:class:`CycleSpec`, stored per cycle: ``webgather recrawl DIR --budget
N`` may change them from one cycle to the next without a conflict).

Storage: the Redis backend keeps it under ``wg:{crawl}:definition`` (``SET
NX``: the first writer wins); the in-process hub keeps it beside the hub.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.transport import Backend
from webgather.config import CrawlConfig, load
from webgather.config.local import LOCAL_KEYS
from webgather.errors import ClusterError, IncompatibleCrawl, WriteFailed

__all__ = ["DEFINITION_FILE", "CrawlDefinition", "CycleSpec", "identity", "publish", "publish_cycle", "read",
           "read_cycle", "read_saved", "save"]

DEFINITION_FILE = "definition.json"
"""The crawl's definition beside its output (``DIR/definition.json``): what ``recrawl DIR`` and a resume
take the crawl's settings from, a one-node crawl's as a cluster crawl's."""

CYCLE_PREFIX = "recrawl."
MEMORY_SIZES = frozenset({
    "frontier.seen_memory_entries", "frontier.seen_cache_entries", "frontier.queue_memory_items",
    "frontier.host_queue_memory",
})
"""How much of the frontier and seen-set one node holds in RAM: they change no URL a crawl fetches,
so a resume does not refuse over them (a release that changes one of their defaults, as 250,000
queue heads did, must not strand a crawl started before it); the stored value stays in force."""
"""Config keys that belong to a cycle, not to the crawl's definition."""
if TYPE_CHECKING:
    from webgather.cluster.redis import RedisBackend


def _is_redis(backend: Backend) -> TypeGuard[RedisBackend]:
    """Imported only when asked: redis-py costs a one-node crawl (in-process backend) about 20 MiB and a second."""
    if isinstance(backend, InProcessHub):
        return False
    from webgather.cluster.redis import RedisBackend

    return isinstance(backend, RedisBackend)


_HUB_DEFINITIONS: weakref.WeakKeyDictionary[InProcessHub, str] = weakref.WeakKeyDictionary()
_HUB_CYCLES: weakref.WeakKeyDictionary[InProcessHub, dict[int, str]] = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True)
class CrawlDefinition:
    config: dict[str, Any]
    """Flattened config (dotted names), without the per-node keys."""
    seeds: tuple[str, ...]
    epoch: float

    @classmethod
    def of(cls, config: CrawlConfig, seeds: Sequence[str], epoch: float) -> CrawlDefinition:
        flat = _flatten(dataclasses.asdict(config))
        return cls({k: v for k, v in flat.items() if k not in LOCAL_KEYS and not k.startswith(CYCLE_PREFIX)},
                   tuple(seeds), round(epoch, 3))

    @property
    def n_buckets(self) -> int:
        return int(self.config["cluster.n_buckets"])

    @property
    def partition_by(self) -> str:
        return str(self.config["cluster.partition_by"])

    def to_text(self) -> str:
        return json.dumps({"config": self.config, "seeds": list(self.seeds), "epoch": self.epoch},
                          sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> CrawlDefinition:
        try:
            data = json.loads(text)
            return cls(dict(data["config"]), tuple(str(s) for s in data["seeds"]), float(data["epoch"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ClusterError(f"stored crawl definition is unreadable: {exc}") from None

    def crawl_config(self, **local: Any) -> CrawlConfig:
        """The crawl's config with this node's local settings (dotted names, None = default)."""
        values = dict(self.config)
        values["seeds"] = self.seeds
        values.update({k: v for k, v in local.items() if v is not None})
        return load(None, {}, values)

    def differences(self, other: CrawlDefinition) -> list[str]:
        """Config keys whose values differ (the seeds and epoch may differ: a resumed crawl adds seeds;
        the :data:`MEMORY_SIZES` may too)."""
        keys = {k for k in set(self.config) | set(other.config)
                if not k.startswith(CYCLE_PREFIX) and k not in MEMORY_SIZES}
        return sorted(k for k in keys if self.config.get(k) != other.config.get(k))


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = list(value) if isinstance(value, tuple) else value
    return flat


def identity(definition: CrawlDefinition) -> dict[str, Any]:
    """The settings every node registers (``register_crawl``): M, partition key, config digest."""
    digest = hashlib.sha256(json.dumps(definition.config, sort_keys=True).encode()).hexdigest()[:16]
    return {"n_buckets": definition.n_buckets, "partition_by": definition.partition_by, "config": digest}


async def publish(backend: Backend, definition: CrawlDefinition) -> CrawlDefinition:
    """Store ``definition`` unless the crawl has one; returns the stored one.

    A stored definition whose config differs raises :class:`IncompatibleCrawl`
    naming the keys (a resumed crawl must be started with the same options)."""
    text = definition.to_text()
    if _is_redis(backend):
        key = backend.keys.prefix + "definition"
        with backend.errors():
            await backend.client.set(key, text, nx=True)
            raw = await backend.client.get(key)
        stored = raw.decode() if isinstance(raw, bytes) else str(raw)
    elif isinstance(backend, InProcessHub):
        stored = _HUB_DEFINITIONS.setdefault(backend, text)
    else:
        raise ClusterError(f"no definition store for backend {type(backend).__name__}")
    found = CrawlDefinition.from_text(stored)
    diff = found.differences(definition)
    if diff:
        raise IncompatibleCrawl(f"this crawl was started with other settings: {', '.join(diff)} differ")
    return found


async def read(backend: Backend) -> CrawlDefinition | None:
    """The crawl's stored definition, or None if no crawl of that name was started."""
    if _is_redis(backend):
        with backend.errors():
            raw = await backend.client.get(backend.keys.prefix + "definition")
        if raw is None:
            return None
        return CrawlDefinition.from_text(raw.decode() if isinstance(raw, bytes) else str(raw))
    if isinstance(backend, InProcessHub):
        text = _HUB_DEFINITIONS.get(backend)
        return None if text is None else CrawlDefinition.from_text(text)
    raise ClusterError(f"no definition store for backend {type(backend).__name__}")


def save(out_dir: str | Path, definition: CrawlDefinition) -> None:
    """Keep ``definition`` as ``out_dir/definition.json`` (atomically; the same settings and seeds:
    nothing written, so a resume on a full disk gets as far as before)."""
    path = Path(out_dir) / DEFINITION_FILE
    text = definition.to_text()
    try:
        kept = read_saved(out_dir)
        if kept is not None and (kept.config, kept.seeds) == (definition.config, definition.seeds):
            return
        temp = path.with_name(f".{DEFINITION_FILE}.{os.getpid()}.tmp")
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, path)
    except OSError as exc:
        raise WriteFailed.from_os(f"cannot write {path}", exc) from exc


def read_saved(out_dir: str | Path) -> CrawlDefinition | None:
    """The definition kept in ``out_dir`` (None: a crawl from before it was kept, or no crawl there)."""
    path = Path(out_dir) / DEFINITION_FILE
    if not Path(out_dir).is_dir():  # none yet, or not a directory (the caller says what is wrong with it)
        return None
    try:
        return CrawlDefinition.from_text(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ClusterError(f"cannot read {path}: {exc.strerror}") from None


@dataclasses.dataclass(frozen=True)
class CycleSpec:
    """One re-crawl cycle of a cluster crawl: what every node of the cycle agrees on.

    The cycle's number is the coordinator's counter ``recrawl.cycle`` (see
    :mod:`webgather.runtime.cycle.cluster`); this is what is stored beside it."""

    cycle: int
    started_s: float
    """Wall time the cycle was started (the next one of a continuous crawl starts a cycle length later)."""
    recrawl: dict[str, Any]
    """The cycle's ``RecrawlConfig`` fields."""
    continuous: bool = False
    """Part of ``crawl --continuous``: nodes that joined by name wait for the next cycle."""

    def to_text(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> CycleSpec:
        try:
            data = json.loads(text)
            return cls(int(data["cycle"]), float(data["started_s"]), dict(data["recrawl"]), bool(data["continuous"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ClusterError(f"stored re-crawl cycle is unreadable: {exc}") from None


async def publish_cycle(backend: Backend, spec: CycleSpec) -> None:
    """Store ``spec`` (replacing a cycle of that number that was never started)."""
    if _is_redis(backend):
        with backend.errors():
            await backend.client.set(f"{backend.keys.prefix}cycle:{spec.cycle}", spec.to_text())
    elif isinstance(backend, InProcessHub):
        _HUB_CYCLES.setdefault(backend, {})[spec.cycle] = spec.to_text()
    else:
        raise ClusterError(f"no definition store for backend {type(backend).__name__}")


async def read_cycle(backend: Backend, cycle: int) -> CycleSpec | None:
    if _is_redis(backend):
        with backend.errors():
            raw = await backend.client.get(f"{backend.keys.prefix}cycle:{cycle}")
        text = None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)
    elif isinstance(backend, InProcessHub):
        text = _HUB_CYCLES.get(backend, {}).get(cycle)
    else:
        raise ClusterError(f"no definition store for backend {type(backend).__name__}")
    return None if text is None else CycleSpec.from_text(text)
