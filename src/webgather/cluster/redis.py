"""The Redis backend (Redis or Valkey >= 6.2) of the cluster protocols.

Keys of crawl ``C`` all start with ``wg:{C}:`` (the braces make Redis Cluster
keep a crawl in one hash slot, so the Lua scripts may touch any of them):

==================  ===============================================================
``b:<bucket>``      stream of the bucket's payloads (field ``p``); consumer group ``wg``
``ready``           set of buckets that may have never-delivered payloads (a hint)
``i:<hash>``        a reader's set of buckets (its interest), expires when unused
``bell``            stream of length 1, bumped by every send: idle receivers block on it
``table``           hash ``version``, ``n_buckets``, ``body`` (the BucketTable as JSON)
``settings``        string: the crawl's settings as canonical JSON
``members``         set of node ids; ``m:<node>``: string info JSON with a TTL (``SET PX``)
``lease``           string: the lease holder, with a TTL (``SET NX PX``)
``settings``        also the crawl's marker: a node that registered the crawl finds it at every
                    heartbeat and lease renewal; gone (FLUSHALL, a restart without persistence), the
                    node stops with :class:`~webgather.errors.CannotContinue` instead of crawling on
                    an empty Redis (no table, no counters: the crawl's end would never be seen); a
                    node that read the crawl's definition before a flush does not write it again
``definition``      string: the crawl's definition (``cluster.definition``), ``SET NX``
``counters``        hash of integer counters (``HINCRBY``)
``addresses``       hash host -> address (``HSETNX`` in a script: the first published wins)
==================  ===============================================================

Streams: every node reads through the crawl's one consumer group, as consumer
``<node id>``; ``XREADGROUP`` makes a payload pending for that node, ``XACK``
ends it and the entry is then deleted (``XDEL``), so a stream holds exactly
the unacked payloads (``pending_count`` is ``XLEN``) and nothing unacked is
ever trimmed. ``claim_stale`` is ``XAUTOCLAIM``.

Reading without polling every stream: a node owns ~M/N buckets (1024 of 4096
with 4 nodes) but at any moment few of them have new data, and naming 1024
streams in every call is what costs (measured: ~3 ms per call whether one
XREADGROUP names them all or a script reads each, almost all of it spent
shipping and parsing the 1024 key names). So ``send`` adds the bucket to the
``ready`` set in the same script as the ``XADD``, and a reader registers its
bucket list once as an *interest set* ``i:<hash of the list>`` (content-
addressed, so two readers with the same list share it, and a new table means a
new list and a new set; unused sets expire after 10 minutes and are re-created
on demand). ``receive`` is then one script with constant-size arguments: it
reads only the streams in ``SINTER(ready, interest)``, unflagging a bucket it
reads dry in the same atomic step (so a send cannot slip between read and
unflag): ~0.2 ms on an idle node instead of ~3 ms. When nothing is there it
blocks on ``XREAD BLOCK`` of the ``bell`` stream from the bell id the script
returned, so a send in between wakes it at once (every send rings the bell,
so an idle node may wake for another node's bucket: one cheap read, then it
waits again). ``bench/cluster_transport.py`` prints these figures.

Durability: Redis acknowledges a write after appending it to its AOF (the
embedded server runs with ``appendonly yes``), so a killed and restarted
server keeps every acked send, ack and table. While Redis is down every call
raises :class:`~webgather.errors.BackendUnavailable` (the client retries a
dropped connection twice within ~0.1 s first); once it is back, payloads that
were delivered but not acked are still pending and come back by
``claim_stale``. Redis exceptions are translated in one place,
:func:`_translated`. Idle and expiry times are the server's (real time);
``receive``'s wait deadline reads the injected clock.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions as rex
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from webgather.cluster import _common as common
from webgather.cluster import _redis_scripts as lua
from webgather.cluster._redis_keys import Keys, redact_url
from webgather.cluster.mapping import DEFAULT_BUCKETS, MAX_BUCKETS, BucketTable
from webgather.cluster.transport import Delivery
from webgather.errors import BackendBusy, BackendUnavailable, CannotContinue, ClusterError
from webgather.clock import Clock, SystemClock

__all__ = ["GROUP", "RedisBackend", "RedisCoordinator", "RedisTransport", "check_url", "redact_url"]

GROUP = "wg"
INTEREST_TTL_MS = 600_000
"""An interest set unused this long expires (a node re-creates it on its next read)."""
MIN_SERVER_VERSION = (6, 2)
ADDRESS_CHUNK = 1000
"""Hosts per script call or HMGET (Lua's unpack takes at most ~8000 values)."""
POOL_CONNECTIONS = 128
"""Connections per node. Peak use: up to three batches of 64 concurrent commands (acks, a recovery's or a
hand-off's sends, the router's flush) plus the loops; beyond the pool a command waits (up to the socket
timeout) for a free connection instead of failing with "Too many connections" as redis-py's default pool did."""
_ID = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")
_CLOSED = re.compile(r"\bclosed\b|not connected", re.IGNORECASE)
"""A RuntimeError of redis-py or asyncio about a connection's state (e.g. ``unable to perform operation on
<TCPTransport closed=True ...>; the handler is closed``): the link is gone, an outage."""


@contextmanager
def _translated(where: str) -> Iterator[None]:
    """The one place redis-py exceptions become webgather errors."""
    try:
        yield
    except rex.BusyLoadingError as exc:
        raise BackendUnavailable(f"Redis at {where} is loading its data, retry: {_line(exc)}") from None
    except (rex.ConnectionError, rex.TimeoutError, OSError) as exc:
        if isinstance(exc, rex.MaxConnectionsError) or str(exc) == "No connection available.":
            raise BackendBusy(f"all {POOL_CONNECTIONS} connections of this node's Redis client are in use "
                              f"(Redis at {where} may be fine): {_line(exc)}") from None
        raise BackendUnavailable(f"cannot reach Redis at {where}: {_line(exc)}") from None
    except rex.RedisError as exc:
        raise ClusterError(f"Redis at {where} refused a command: {_line(exc)}") from None
    except RuntimeError as exc:
        if not _CLOSED.search(str(exc)):
            raise
        # a link reset mid-command: redis-py writes to a transport asyncio (uvloop) already closed
        raise BackendUnavailable(f"cannot reach Redis at {where}: connection closed: {_line(exc)}") from None


def _pool(url: str, timeout: float) -> aioredis.BlockingConnectionPool:
    """The client's pool of ``url`` (no connection made yet); a malformed URL raises BackendUnavailable."""
    try:
        return aioredis.BlockingConnectionPool.from_url(
            url, protocol=2, socket_timeout=timeout, socket_connect_timeout=min(timeout, 5.0),
            retry=Retry(ExponentialBackoff(cap=0.1, base=0.02), 2), max_connections=POOL_CONNECTIONS,
            timeout=timeout,
        )
    except (ValueError, TypeError) as exc:
        raise BackendUnavailable(f"bad Redis URL {redact_url(url)}: {_line(exc)}") from None


def check_url(url: str) -> None:
    """Raise BackendUnavailable at once if ``url`` is not a Redis URL (before any wait for the server)."""
    _pool(url, 1.0)


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class RedisBackend:
    """One crawl's connection to Redis (a :class:`~webgather.cluster.transport.Backend`).

    Make one with :meth:`connect`; close it with :meth:`aclose` or ``async with``.
    """

    def __init__(self, client: aioredis.Redis, crawl: str, n_buckets: int, url: str,
                 clock: Clock, max_block_s: float) -> None:
        self.client = client
        self.crawl = crawl
        self.n_buckets = n_buckets
        self.url = url  # the keep-alive thread opens its own connection to it (cluster.keepalive)
        self.where = redact_url(url)
        self.keys = Keys(crawl)
        self.clock = clock
        self.max_block_s = max_block_s
        self.scripts = {name: client.register_script(getattr(lua, name)) for name in lua.__all__}
        self._coordinator = RedisCoordinator(self)

    @classmethod
    async def connect(cls, url: str, crawl: str, n_buckets: int = DEFAULT_BUCKETS, *,
                      clock: Clock | None = None, socket_timeout_s: float = 10.0) -> RedisBackend:
        """Connect to ``url`` (``redis://``, ``rediss://`` or ``unix://``) and check the
        server (PING, version >= 6.2). A bad or unreachable URL raises BackendUnavailable."""
        common.check_crawl_name(crawl)
        if isinstance(n_buckets, bool) or not isinstance(n_buckets, int) or not 1 <= n_buckets <= MAX_BUCKETS:
            raise ClusterError(f"n_buckets must be in 1..{MAX_BUCKETS}, got {n_buckets!r}")
        timeout = common.check_seconds("socket_timeout_s", socket_timeout_s, positive=True)
        client = aioredis.Redis.from_pool(_pool(url, timeout))
        try:
            await _check_server(client, redact_url(url))
        except BaseException:
            await client.aclose()
            raise
        return cls(client, crawl, n_buckets, url, clock or SystemClock(), timeout / 2)

    def transport(self, node: str) -> RedisTransport:
        return RedisTransport(self, common.check_node(node))

    def coordinator(self) -> RedisCoordinator:
        return self._coordinator

    async def run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run one of the Lua scripts (errors translated)."""
        with _translated(self.where):
            return await self.scripts[name](keys=list(keys), args=list(args))

    @contextmanager
    def errors(self) -> Iterator[None]:
        with _translated(self.where):
            yield

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> RedisBackend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _check_server(client: aioredis.Redis, where: str) -> None:
    """The server at ``where`` answers and is Redis/Valkey >= 6.2 (else BackendUnavailable)."""
    with _translated(where):
        info = await client.info("server")
    raw = str(info.get("redis_version", "0"))
    version = tuple(int(p) for p in re.findall(r"\d+", raw)[:2])
    if version < MIN_SERVER_VERSION:
        raise BackendUnavailable(f"Redis at {where} is version {raw}; webgather needs >= 6.2")


def _deliveries(flat: Sequence[bytes]) -> list[Delivery]:
    return [Delivery(int(flat[i]), flat[i + 1].decode("ascii"), bytes(flat[i + 2]))
            for i in range(0, len(flat), 3)]


class RedisTransport:
    """:class:`~webgather.cluster.transport.UrlTransport` of one node over Redis Streams."""

    def __init__(self, backend: RedisBackend, node: str) -> None:
        self.backend = backend
        self.node = node
        self.keys = backend.keys
        self._turn = 0
        self._last: tuple[list[int], list[int], str] | None = None

    async def send(self, bucket: int, payload: bytes) -> str:
        (bucket,) = common.check_buckets([bucket], self.backend.n_buckets)
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise ClusterError(f"payload must be bytes, got {type(payload).__name__}")
        keys = (self.keys.stream(bucket), self.keys.ready, self.keys.bell)
        raw = await self.backend.run("SEND", keys, (GROUP, bytes(payload), bucket))
        return bytes(raw).decode("ascii")

    async def receive(self, buckets: Sequence[int], max_batches: int, block_s: float) -> list[Delivery]:
        wanted, interest = self._interest(buckets)
        common.check_count("max_batches", max_batches)
        block_s = common.check_seconds("block_s", block_s)
        deadline: float | None = None
        while True:
            got, bell = await self._read(wanted, interest, max_batches)
            if got or block_s == 0 or not wanted:
                return got
            now = self.backend.clock.monotonic()
            deadline = now + block_s if deadline is None else deadline
            if now >= deadline:
                return got
            await self._wait_bell(bell, min(deadline - now, self.backend.max_block_s))

    def _interest(self, buckets: Sequence[int]) -> tuple[list[int], str]:
        """Checked buckets and the name of their interest set (cached: a node asks for
        the same ~M/N buckets on every call until the table changes)."""
        if isinstance(buckets, (list, tuple, range)):
            raw = list(buckets)
        else:
            raw = common.check_buckets(buckets, self.backend.n_buckets)
        if self._last is not None and self._last[0] == raw:
            return self._last[1], self._last[2]
        wanted = common.check_buckets(raw, self.backend.n_buckets)
        digest = hashlib.blake2b(",".join(map(str, sorted(wanted))).encode(), digest_size=12).hexdigest()
        self._last = (raw, wanted, f"{self.keys.prefix}i:{digest}")
        return wanted, self._last[2]

    async def _read(self, wanted: list[int], interest: str, max_batches: int) -> tuple[list[Delivery], str]:
        if not wanted:
            return [], "0-0"
        self._turn += 1
        keys = [self.keys.ready, self.keys.bell, interest]
        args = [GROUP, self.node, max_batches, self.keys.prefix + "b:", self._turn, INTEREST_TTL_MS]
        for _ in range(2):
            bell, flat, missing = await self.backend.run("READ", keys, args)
            if not missing:
                return _deliveries(flat), bytes(bell).decode("ascii")
            await self.backend.run("INTEREST", [interest], [INTEREST_TTL_MS, *wanted])
        # deleted between the write and the read: Redis lost its data (FLUSHALL) or evicts; the node's next beat
        # finds the crawl's marker gone and stops, or the read is retried as after an outage
        raise BackendUnavailable("the bucket interest set vanished right after it was written (FLUSHALL, or eviction)")

    async def _wait_bell(self, bell: str, wait_s: float) -> None:
        with self.backend.errors():
            await self.backend.client.xread({self.keys.bell: bell}, count=1, block=max(1, int(wait_s * 1000)))

    async def ack(self, bucket: int, delivery_ids: Sequence[str]) -> int:
        (bucket,) = common.check_buckets([bucket], self.backend.n_buckets)
        ids = [i for i in common.check_ids(delivery_ids) if _ID.fullmatch(i)]
        if not ids:
            return 0
        return int(await self.backend.run("ACK", [self.keys.stream(bucket)], [GROUP, *ids]))

    async def claim_stale(self, buckets: Sequence[int], min_idle_s: float,
                          max_batches: int = 1000) -> list[Delivery]:
        wanted = common.check_buckets(buckets, self.backend.n_buckets)
        idle_ms = round(common.check_seconds("min_idle_s", min_idle_s) * 1000)
        common.check_count("max_batches", max_batches)
        if not wanted:
            return []
        keys = [self.keys.stream(b) for b in wanted]
        flat = await self.backend.run("CLAIM", keys, [GROUP, self.node, idle_ms, max_batches, *wanted])
        return _deliveries(flat)

    async def requeue(self, node: str, buckets: Sequence[int]) -> int:
        wanted = common.check_buckets(buckets, self.backend.n_buckets)
        if not wanted:
            return 0
        keys = [*(self.keys.stream(b) for b in wanted), self.keys.ready, self.keys.bell]
        return int(await self.backend.run("REQUEUE", keys, [GROUP, common.check_node(node), *wanted]))

    async def pending_count(self, bucket: int) -> int:
        (bucket,) = common.check_buckets([bucket], self.backend.n_buckets)
        with self.backend.errors():
            return int(await self.backend.client.xlen(self.keys.stream(bucket)))

    async def pending_total(self, buckets: Sequence[int]) -> int:
        checked = common.check_buckets(buckets, self.backend.n_buckets)
        if not checked:
            return 0
        # summed by the server: the end-of-crawl check asks this of every bucket on every idle beat
        return int(await self.backend.run("PENDING_TOTAL", [self.keys.stream(b) for b in checked], []))


class RedisCoordinator:
    """:class:`~webgather.cluster.transport.Coordinator` over Redis keys (module docstring)."""

    def __init__(self, backend: RedisBackend) -> None:
        self.backend = backend
        self.keys = backend.keys
        self._cached: BucketTable | None = None
        self.registered = False
        """This coordinator registered the crawl (its settings key is the marker a flush removes)."""

    def data_lost(self) -> CannotContinue:
        return CannotContinue(
            f"Redis at {self.backend.where} lost the data of crawl {self.backend.crawl!r} (its keys are gone: "
            "FLUSHALL, or a restart without persistence); this node stopped and kept its state, "
            "the crawl cannot go on from that Redis")

    async def get_table(self) -> BucketTable | None:
        known = "" if self._cached is None else str(self._cached.version)
        reply = await self.backend.run("GET_TABLE", [self.keys.table], [known])
        if not reply:
            self._cached = None
        elif len(reply) == 2:
            table = BucketTable.from_dict(common.from_json(reply[1], "bucket table"))
            if str(table.version) != bytes(reply[0]).decode("ascii", "replace"):
                raise ClusterError("stored bucket table disagrees with its version field")
            self._cached = table
        return self._cached

    async def cas_table(self, expected_version: int | None, new: BucketTable) -> bool:
        common.check_cas(expected_version, new, None)
        body = common.to_json(new.to_dict(), "bucket table")
        expected = "" if expected_version is None else str(expected_version)
        done = await self.backend.run("CAS_TABLE", [self.keys.table],
                                      [expected, str(new.version), str(new.n_buckets), body])
        if done == -1:
            raise ClusterError(f"table has {new.n_buckets} buckets, unlike the crawl's table")
        if done == 1:
            self._cached = new
        return bool(done == 1)

    async def register_crawl(self, settings: Mapping[str, Any], *, defined: bool = False) -> dict[str, Any]:
        text, given = common.mapping_json(settings, "crawl settings")
        stored_text = await self.backend.run("ENSURE_SETTINGS", [self.keys.settings, self.keys.definition],
                                             [text, "1" if defined else "0"])
        if stored_text is None:  # flushed since the caller read the definition: the marker stays gone
            raise self.data_lost()
        stored = common.from_json(stored_text, "crawl settings")
        if not isinstance(stored, dict):
            raise ClusterError("stored crawl settings are not a JSON object")
        common.settings_mismatch(stored, given)
        self.registered = True
        return stored

    async def heartbeat(self, node: str, info: Mapping[str, Any], ttl_s: float) -> None:
        common.check_node(node)
        ttl_ms = max(1, round(common.check_seconds("ttl_s", ttl_s, positive=True) * 1000))
        text = common.mapping_json(info, "member info")[0]
        with self.backend.errors():
            async with self.backend.client.pipeline(transaction=True) as pipe:
                pipe.exists(self.keys.settings)
                pipe.set(self.keys.member_prefix + node, text, px=ttl_ms)
                pipe.sadd(self.keys.members, node)
                marked = (await pipe.execute())[0]
        if self.registered and not marked:
            raise self.data_lost()

    async def members(self) -> dict[str, dict[str, Any]]:
        flat = await self.backend.run("MEMBERS", [self.keys.members], [self.keys.member_prefix])
        pairs = ((_text(flat[i]), common.from_json(flat[i + 1], "member info"))
                 for i in range(0, len(flat), 2))
        return dict(sorted(pairs))

    async def leave(self, node: str) -> None:
        common.check_node(node)
        keys = [self.keys.member_prefix + node, self.keys.members, self.keys.lease]
        await self.backend.run("LEAVE", keys, [node])

    async def try_lease(self, node: str, ttl_s: float) -> bool:
        common.check_node(node)
        ttl_ms = max(1, round(common.check_seconds("ttl_s", ttl_s, positive=True) * 1000))
        keys, guard = [self.keys.lease, self.keys.settings], "1" if self.registered else "0"
        taken = await self.backend.run("TRY_LEASE", keys, [node, ttl_ms, guard])
        if taken == -1:
            raise self.data_lost()
        return bool(taken == 1)

    async def lease_check(self, node: str) -> tuple[int, int | None]:
        """The member key of ``node``: its remaining life in Redis's time (ms, negative if it is
        gone), and the table's version (None: no table). One script call (``runtime.member.fence``)."""
        ttl, version = await self.backend.run("LEASE_CHECK", [self.keys.member_prefix + node, self.keys.table], [])
        return int(ttl), int(version) if version else None

    async def lease_holder(self) -> str | None:
        """The node holding the coordinator lease (the one coordinating), or None."""
        with self.backend.errors():
            raw = await self.backend.client.get(self.keys.lease)
        return None if raw is None else _text(raw)

    async def incr(self, name: str, n: int = 1) -> int:
        common.check_counter(name, n)
        with self.backend.errors():
            return int(await self.backend.client.hincrby(self.keys.counters, name, n))

    async def counters(self) -> dict[str, int]:
        with self.backend.errors():
            raw = await self.backend.client.hgetall(self.keys.counters)
        return {_text(k): int(v) for k, v in sorted(raw.items())}

    async def take_permits(self, name: str, limit: int, n: int) -> int:
        common.check_permits(name, limit, n)
        return int(await self.backend.run("TAKE_PERMITS", [self.keys.counters], [name, limit, n]))

    async def publish_addresses(self, answers: Mapping[str, str]) -> dict[str, str]:
        pairs = list(common.check_addresses(answers).items())
        stored: dict[str, str] = {}
        for start in range(0, len(pairs), ADDRESS_CHUNK):
            chunk = pairs[start:start + ADDRESS_CHUNK]
            flat = [v for pair in chunk for v in pair]
            values = await self.backend.run("PUBLISH_ADDRESSES", [self.keys.addresses], flat)
            stored.update((host, _text(value)) for (host, _a), value in zip(chunk, values, strict=True))
        return stored

    async def get_addresses(self, hosts: Sequence[str] | None = None) -> dict[str, str]:
        client, key = self.backend.client, self.keys.addresses
        with self.backend.errors():
            if hosts is None:  # HSCAN: a big hash is read in steps, never blocking the server long
                return {_text(h): _text(a) async for h, a in client.hscan_iter(key, count=ADDRESS_CHUNK)}
            wanted = common.check_hosts(hosts)
            found: dict[str, str] = {}
            for start in range(0, len(wanted), ADDRESS_CHUNK):
                chunk = wanted[start:start + ADDRESS_CHUNK]
                values = await client.hmget(key, chunk)
                found.update((h, _text(v)) for h, v in zip(chunk, values, strict=True) if v is not None)
        return found
