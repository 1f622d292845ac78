"""The lease's keep-alive thread (cluster.keepalive, runtime.member.fence.keeping_alive) over a real
embedded Redis on loopback: a node whose event loop is too busy to beat keeps its membership and its
lease; a hung loop, a table the node has not adopted or a member key already gone confirms no lease."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from process_helpers import own_redis_servers
from webgather.clock import SystemClock
from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.keepalive import KeepAlive, redis_renewer
from webgather.cluster.mapping import initial
from webgather.cluster.redis import RedisBackend
from webgather.config.sections import ClusterConfig
from webgather.runtime.member.fence import FencedHttp, Lease, keeping_alive

CRAWL = "keep"
NODE = "w0"
TTL_S = 1.0
MARGIN_S = 0.25


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[RedisBackend]:
    server = EmbeddedRedis(tmp_path / "redis", tcp=True, appendfsync="everysec")
    url = await asyncio.to_thread(server.start)
    found = await RedisBackend.connect(url, CRAWL, 16)
    try:
        assert await found.coordinator().cas_table(None, initial([NODE], 16))
        yield found
    finally:
        await found.aclose()
        await asyncio.to_thread(server.stop)
    assert own_redis_servers() == []


async def _member_pttl_ms(backend: RedisBackend) -> int:
    return int(await backend.client.pttl(backend.keys.member_prefix + NODE))


class _NoHttp:
    async def fetch(self, url: str, *, headers: object = None) -> object:  # never called here
        raise AssertionError(url)


async def test_a_loop_too_busy_to_beat_keeps_its_membership_and_its_lease(backend: RedisBackend) -> None:
    clock = SystemClock()
    lease = Lease(TTL_S, MARGIN_S)
    http = FencedHttp(_NoHttp(), lease, clock, lambda host: True, NODE)  # type: ignore[arg-type]
    sent_at = clock.monotonic()
    await backend.coordinator().heartbeat(NODE, {"idle": False}, TTL_S)  # the loop's beat, then its table read
    lease.renewed(sent_at)
    lease.table_read(lease.mark())
    cluster = ClusterConfig(heartbeat_s=0.1, member_ttl_s=TTL_S, lease_margin_s=MARGIN_S)
    with keeping_alive(backend.transport(NODE), NODE, cluster, lease, http, lambda: 0) as keepalive:
        assert keepalive is not None
        time.sleep(2.5 * TTL_S)  # the event loop does nothing else: no beat, no table read
        assert lease.valid(clock.monotonic()), "the lease lapsed while the loop was busy"
        assert await _member_pttl_ms(backend) > 0, "the member key expired: the others would call it dead"
        assert keepalive.renewals >= 10
    assert http.counts["keepalive_renewals"] == keepalive.renewals
    renewed = lease.confirmed_at
    time.sleep(0.3)  # stopped: nothing renews any more
    assert lease.confirmed_at == renewed


async def test_no_keepalive_thread_without_redis(backend: RedisBackend) -> None:
    lease = Lease(TTL_S, MARGIN_S)
    http = FencedHttp(_NoHttp(), lease, SystemClock(), lambda host: True, NODE)  # type: ignore[arg-type]
    with keeping_alive(object(), NODE, ClusterConfig(), lease, http, lambda: 0) as keepalive:
        assert keepalive is None


def _keepalive(backend: RedisBackend, adopted: int, beat_at: float, kept: list[float]) -> KeepAlive:
    renew, close = redis_renewer(backend.url, CRAWL, NODE, TTL_S)
    return KeepAlive(renew, period_s=0.1, adopted=lambda: adopted, loop_beat_at=lambda: beat_at,
                     kept=kept.append, close=close, stall_s=5.0)


async def test_a_renewal_extends_the_member_key_and_reports_its_send_time(backend: RedisBackend) -> None:
    await backend.coordinator().heartbeat(NODE, {"idle": False}, 0.2)
    kept: list[float] = []
    keepalive = _keepalive(backend, 0, time.monotonic(), kept)
    before = time.monotonic()
    assert await asyncio.to_thread(keepalive.tick)
    keepalive.close()
    assert len(kept) == 1 and before <= kept[0] <= time.monotonic()
    assert await _member_pttl_ms(backend) > 500  # extended from 200 ms to TTL_S


@pytest.mark.parametrize("case", ["newer table", "key gone", "loop hung"])
async def test_nothing_is_renewed_when_it_must_not_be(backend: RedisBackend, case: str) -> None:
    if case != "key gone":
        await backend.coordinator().heartbeat(NODE, {"idle": False}, 0.5)
    adopted = -1 if case == "newer table" else 0  # the stored table is version 0
    beat_at = time.monotonic() - (60.0 if case == "loop hung" else 0.0)
    kept: list[float] = []
    keepalive = _keepalive(backend, adopted, beat_at, kept)
    assert not await asyncio.to_thread(keepalive.tick)
    keepalive.close()
    assert kept == []
    pttl = await _member_pttl_ms(backend)
    if case == "key gone":
        assert pttl == -2  # not re-created: the loop's next heartbeat (with its info) does that
    elif case == "loop hung":
        assert 0 < pttl <= 500  # not extended: the others will recover its buckets
    else:  # the member lives on, as after the loop's own heartbeat; fetches wait for the loop to adopt
        assert pttl > 500
