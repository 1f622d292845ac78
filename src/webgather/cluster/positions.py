"""GNP state shared by a crawl's nodes (``--partition-by gnp``): measurements and host placements.

What is stored (in-process: one :class:`InProcessPositions` per hub; Redis: keys
under the crawl's prefix, beside those listed in :mod:`webgather.cluster.redis`):

====================  ============================================================
``gnp:probes``        hash node -> JSON list: the node's filtered httpping (ms) to
                      each landmark, in the crawl's landmark order (overwritten)
``gnp:asks``          list of hosts some node wants placed (``RPUSH``); every
                      node reads it from the index it has reached
``gnp:lat:<host>``    hash node -> filtered httpping (ms) from that node to the host
``gnp:place``         hash host -> placement (``"<bucket> <node> <x,y,..>"``: node
                      ``-`` and no coordinates for the two-stage fallback);
                      ``HSETNX``: the first published wins
``gnp:load``          hash node -> hosts GNP gave it (``HINCRBY`` by the node whose
                      placement won): the load Top-K balances
====================  ============================================================

Placements are set-if-absent like the shared addresses of ``--partition-by ip``:
a host's bucket never changes during a crawl, so every node files it in the same
bucket whatever coordinates it fitted (see :mod:`webgather.runtime.partition.gnp`).
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from webgather.cluster import _common as common
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.redis import RedisBackend
from webgather.cluster.transport import Backend
from webgather.errors import ClusterError

__all__ = ["InProcessPositions", "Placement", "PositionBook", "RedisPositions", "positions_of"]

CHUNK = 500
"""Hosts per Redis round trip."""
FALLBACK = "-"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a host's URLs live: its bucket, and the node GNP chose (None: the two-stage fallback)."""

    bucket: int
    node: str | None = None
    coord: tuple[float, ...] = ()
    """The host's GNP coordinates in the frame of the node that placed it (empty: fallback)."""

    def encode(self) -> str:
        return f"{self.bucket} {self.node or FALLBACK} {','.join(repr(x) for x in self.coord)}".rstrip()

    @classmethod
    def decode(cls, text: str) -> Placement:
        bucket, _, rest = text.partition(" ")
        node, _, coord = rest.partition(" ")
        try:
            values = tuple(float(x) for x in coord.split(",")) if coord else ()
        except ValueError:
            values = (math.nan,)
        if not bucket.isdigit() or not node or not all(math.isfinite(x) for x in values):
            raise ClusterError(f"malformed host placement {text!r}")
        return cls(int(bucket), None if node == FALLBACK else node, values)


class PositionBook(Protocol):
    """The GNP state of one crawl (module docstring); every method may raise BackendUnavailable."""

    async def publish_probe(self, node: str, latencies_ms: Sequence[float]) -> None: ...

    async def get_probes(self) -> dict[str, tuple[float, ...]]: ...

    async def ask(self, hosts: Sequence[str]) -> None: ...

    async def asked(self, start: int) -> list[str]:
        """Hosts asked for, from index ``start`` on (the list only grows)."""
        ...

    async def publish_latencies(self, node: str, latencies_ms: Mapping[str, float]) -> None: ...

    async def get_latencies(self, hosts: Sequence[str]) -> dict[str, dict[str, float]]:
        """host -> node -> ms, for the hosts of ``hosts`` measured by some node."""
        ...

    async def publish_placements(self, placements: Mapping[str, Placement]) -> dict[str, Placement]:
        """Set each host's placement unless it has one; returns the stored one of every host given."""
        ...

    async def get_placements(self, hosts: Sequence[str] | None = None) -> dict[str, Placement]: ...

    async def add_load(self, hosts_by_node: Mapping[str, int]) -> None:
        """Count hosts given to nodes (by whoever published the winning placements)."""
        ...

    async def get_load(self) -> dict[str, int]: ...


def _check_load(hosts_by_node: Mapping[str, int]) -> dict[str, int]:
    for node, count in hosts_by_node.items():
        common.check_node(node)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ClusterError(f"a load is a count of hosts >= 0, got {count!r}")
    return {n: c for n, c in hosts_by_node.items() if c}


def _check_ms(latencies: Sequence[float] | Mapping[str, float]) -> None:
    values = latencies.values() if isinstance(latencies, Mapping) else latencies
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ClusterError(f"latencies must be finite numbers > 0 (ms), got {value!r}")


def _check_start(start: int) -> int:
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ClusterError(f"start must be an integer >= 0, got {start!r}")
    return start


def _check_placements(placements: Mapping[str, Placement]) -> None:
    common.check_hosts(list(placements))
    if not all(isinstance(p, Placement) and p.bucket >= 0 for p in placements.values()):
        raise ClusterError("placements must be Placement records with a bucket >= 0")


class InProcessPositions:
    """The in-process :class:`PositionBook` (one per hub)."""

    def __init__(self) -> None:
        self.probes: dict[str, tuple[float, ...]] = {}
        self.asks: list[str] = []
        self.latencies: dict[str, dict[str, float]] = {}
        self.placements: dict[str, Placement] = {}
        self.load: dict[str, int] = {}

    async def add_load(self, hosts_by_node: Mapping[str, int]) -> None:
        for node, count in _check_load(hosts_by_node).items():
            self.load[node] = self.load.get(node, 0) + count

    async def get_load(self) -> dict[str, int]:
        return dict(self.load)

    async def publish_probe(self, node: str, latencies_ms: Sequence[float]) -> None:
        _check_ms(latencies_ms)
        self.probes[common.check_node(node)] = tuple(float(v) for v in latencies_ms)

    async def get_probes(self) -> dict[str, tuple[float, ...]]:
        return dict(self.probes)

    async def ask(self, hosts: Sequence[str]) -> None:
        self.asks.extend(common.check_hosts(hosts))

    async def asked(self, start: int) -> list[str]:
        return self.asks[_check_start(start):]

    async def publish_latencies(self, node: str, latencies_ms: Mapping[str, float]) -> None:
        common.check_node(node)
        _check_ms(latencies_ms)
        for host in common.check_hosts(list(latencies_ms)):
            self.latencies.setdefault(host, {})[node] = float(latencies_ms[host])

    async def get_latencies(self, hosts: Sequence[str]) -> dict[str, dict[str, float]]:
        return {h: dict(self.latencies[h]) for h in common.check_hosts(hosts) if h in self.latencies}

    async def publish_placements(self, placements: Mapping[str, Placement]) -> dict[str, Placement]:
        _check_placements(placements)
        return {host: self.placements.setdefault(host, p) for host, p in placements.items()}

    async def get_placements(self, hosts: Sequence[str] | None = None) -> dict[str, Placement]:
        if hosts is None:
            return dict(self.placements)
        return {h: self.placements[h] for h in common.check_hosts(hosts) if h in self.placements}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisPositions:
    """The Redis :class:`PositionBook` (keys in the module docstring)."""

    def __init__(self, backend: RedisBackend) -> None:
        self.backend = backend
        self.client = backend.client
        prefix = backend.keys.prefix + "gnp:"
        self.probes_key, self.asks_key, self.place_key = prefix + "probes", prefix + "asks", prefix + "place"
        self.lat_prefix, self.load_key = prefix + "lat:", prefix + "load"

    async def add_load(self, hosts_by_node: Mapping[str, int]) -> None:
        counts = _check_load(hosts_by_node)
        if counts:
            with self.backend.errors():
                async with self.client.pipeline(transaction=False) as pipe:
                    for node, count in counts.items():
                        pipe.hincrby(self.load_key, node, count)
                    await pipe.execute()

    async def get_load(self) -> dict[str, int]:
        with self.backend.errors():
            raw = await self.client.hgetall(self.load_key)
        return {_text(k): int(v) for k, v in raw.items()}

    async def publish_probe(self, node: str, latencies_ms: Sequence[float]) -> None:
        _check_ms(latencies_ms)
        with self.backend.errors():
            await self.client.hset(self.probes_key, common.check_node(node), json.dumps([float(v) for v in latencies_ms]))

    async def get_probes(self) -> dict[str, tuple[float, ...]]:
        with self.backend.errors():
            raw = await self.client.hgetall(self.probes_key)
        return {_text(k): tuple(float(v) for v in common.from_json(v, "GNP probe")) for k, v in raw.items()}

    async def ask(self, hosts: Sequence[str]) -> None:
        wanted = common.check_hosts(hosts)
        with self.backend.errors():
            for start in range(0, len(wanted), CHUNK):
                await self.client.rpush(self.asks_key, *wanted[start:start + CHUNK])

    async def asked(self, start: int) -> list[str]:
        with self.backend.errors():
            return [_text(h) for h in await self.client.lrange(self.asks_key, _check_start(start), -1)]

    async def publish_latencies(self, node: str, latencies_ms: Mapping[str, float]) -> None:
        common.check_node(node)
        _check_ms(latencies_ms)
        with self.backend.errors():
            async with self.client.pipeline(transaction=False) as pipe:
                for host in common.check_hosts(list(latencies_ms)):
                    pipe.hset(self.lat_prefix + host, node, repr(float(latencies_ms[host])))
                await pipe.execute()

    async def get_latencies(self, hosts: Sequence[str]) -> dict[str, dict[str, float]]:
        wanted = common.check_hosts(hosts)
        with self.backend.errors():
            async with self.client.pipeline(transaction=False) as pipe:
                for host in wanted:
                    pipe.hgetall(self.lat_prefix + host)
                rows = await pipe.execute()
        return {h: {_text(n): float(v) for n, v in row.items()} for h, row in zip(wanted, rows, strict=True) if row}

    async def publish_placements(self, placements: Mapping[str, Placement]) -> dict[str, Placement]:
        _check_placements(placements)
        pairs = list(placements.items())
        stored: dict[str, Placement] = {}
        with self.backend.errors():
            for start in range(0, len(pairs), CHUNK):
                chunk = pairs[start:start + CHUNK]
                async with self.client.pipeline(transaction=True) as pipe:  # MULTI: set-if-absent, then read
                    for host, placement in chunk:
                        pipe.hsetnx(self.place_key, host, placement.encode())
                    pipe.hmget(self.place_key, [host for host, _p in chunk])
                    values = (await pipe.execute())[-1]
                stored.update((h, Placement.decode(_text(v))) for (h, _p), v in zip(chunk, values, strict=True))
        return stored

    async def get_placements(self, hosts: Sequence[str] | None = None) -> dict[str, Placement]:
        with self.backend.errors():
            if hosts is None:
                return {_text(h): Placement.decode(_text(v))
                        async for h, v in self.client.hscan_iter(self.place_key, count=CHUNK)}
            wanted = common.check_hosts(hosts)
            found: dict[str, Placement] = {}
            for start in range(0, len(wanted), CHUNK):
                chunk = wanted[start:start + CHUNK]
                values = await self.client.hmget(self.place_key, chunk)
                found.update((h, Placement.decode(_text(v))) for h, v in zip(chunk, values, strict=True) if v is not None)
        return found


_IN_PROCESS: weakref.WeakKeyDictionary[InProcessHub, InProcessPositions] = weakref.WeakKeyDictionary()


def positions_of(backend: Backend) -> PositionBook:
    """The GNP state of the crawl ``backend`` is connected to (one per in-process hub)."""
    if isinstance(backend, RedisBackend):
        return RedisPositions(backend)
    if isinstance(backend, InProcessHub):
        return _IN_PROCESS.setdefault(backend, InProcessPositions())
    raise ClusterError(f"--partition-by gnp needs the Redis or in-process backend, not {type(backend).__name__}")
