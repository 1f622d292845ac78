"""In-process backend details the contract suite does not pin: exact fake-clock boundaries."""

from __future__ import annotations

import asyncio

import pytest

from webgather.cluster.inprocess import InProcessHub
from webgather.errors import ClusterError
from webgather.clock import FakeClock


def test_hub_checks_its_bucket_count() -> None:
    for bad in (0, 4097, True, 2.0):
        with pytest.raises(ClusterError):
            InProcessHub(bad)  # type: ignore[arg-type]


async def test_idle_time_boundary_is_inclusive_on_the_fake_clock() -> None:
    clock = FakeClock()
    hub = InProcessHub(8, clock)
    a, b = hub.transport("a"), hub.transport("b")
    await a.send(1, b"x")
    await a.receive([1], 1, 0)
    clock.advance(0.999)
    assert await b.claim_stale([1], 1.0) == []
    clock.advance(0.001)
    assert [d.payload for d in await b.claim_stale([1], 1.0)] == [b"x"]


async def test_expiry_boundaries_on_the_fake_clock() -> None:
    clock = FakeClock()
    coord = InProcessHub(8, clock).coordinator()
    await coord.heartbeat("a", {}, 2.0)
    assert await coord.try_lease("a", 2.0)
    clock.advance(1.999)
    assert await coord.members() == {"a": {}}
    assert not await coord.try_lease("b", 2.0)
    clock.advance(0.001)
    assert await coord.members() == {}
    assert await coord.try_lease("b", 2.0)


async def test_receive_rotates_its_start_so_no_bucket_starves() -> None:
    hub = InProcessHub(8, FakeClock())
    a = hub.transport("a")
    for _ in range(4):
        for bucket in (0, 1, 2, 3):
            await a.send(bucket, bytes([bucket]))
    firsts = [(await a.receive([0, 1, 2, 3], 1, 0))[0].bucket for _ in range(4)]
    assert sorted(firsts) == [0, 1, 2, 3]


async def test_receive_with_no_buckets_returns_at_once() -> None:
    hub = InProcessHub(8, FakeClock())
    assert await asyncio.wait_for(hub.transport("a").receive([], 5, 60.0), 1.0) == []


async def test_many_waiting_receivers_each_get_their_own_bucket() -> None:
    hub = InProcessHub(8, FakeClock())
    waiting = [asyncio.ensure_future(hub.transport(f"n{b}").receive([b], 5, 5.0)) for b in range(4)]
    await asyncio.sleep(0)
    for b in reversed(range(4)):
        await hub.transport("s").send(b, bytes([b]))
    results = await asyncio.gather(*waiting)
    assert [[(d.bucket, d.payload) for d in got] for got in results] == [[(b, bytes([b]))] for b in range(4)]


async def test_counter_overflow_is_refused_like_redis() -> None:
    coord = InProcessHub(8).coordinator()
    await coord.incr("big", 2**63 - 1)
    with pytest.raises(ClusterError, match="overflow"):
        await coord.incr("big", 1)
    assert await coord.counters() == {"big": 2**63 - 1}
