"""The Redis transport's sends and acks of one event-loop turn go out as one script call (cluster.redis_batch)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from process_helpers import own_redis_servers
from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.redis import RedisBackend
from webgather.cluster.redis_batch import Coalescer
from webgather.errors import BackendUnavailable

N_BUCKETS = 256


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(tmp_path_factory.mktemp("redis")) as running:
        yield running
    assert own_redis_servers() == []


@pytest.fixture
async def backend(server: EmbeddedRedis) -> AsyncIterator[RedisBackend]:
    connected = await RedisBackend.connect(server.url, "batch", N_BUCKETS)
    await connected.client.flushdb()
    try:
        yield connected
    finally:
        await connected.aclose()


def count_scripts(backend: RedisBackend) -> list[str]:
    """Names of the scripts ``backend`` runs from now on."""
    names: list[str] = []

    def counting(name: str, script: Any) -> Any:
        async def counted(**kwargs: Any) -> Any:
            names.append(name)
            return await script(**kwargs)
        return counted

    backend.scripts = {name: counting(name, script) for name, script in backend.scripts.items()}
    return names


async def test_concurrent_sends_are_one_script_call_and_each_is_stored_in_order(backend: RedisBackend) -> None:
    sender, reader = backend.transport("a"), backend.transport("b")
    calls = count_scripts(backend)
    messages = [(bucket % 200, f"m{n}".encode()) for n, bucket in enumerate(range(300))]
    ids = await asyncio.gather(*(sender.send(b, p) for b, p in messages))
    assert calls == ["SEND_MANY"]  # one round trip, not 300
    assert len(set(zip((b for b, _p in messages), ids))) == 300  # ids are unique per stream
    got = await reader.receive(range(N_BUCKETS), 1000, 0)
    assert sorted((d.bucket, d.payload) for d in got) == sorted(messages)
    for bucket in (0, 7, 99):  # two payloads of one bucket arrive in their send order
        assert [d.payload for d in got if d.bucket == bucket] == [f"m{bucket}".encode(), f"m{bucket + 200}".encode()]


async def test_concurrent_acks_are_one_script_call_and_each_counts_its_own(backend: RedisBackend) -> None:
    transport = backend.transport("a")
    for bucket in range(40):
        for n in range(2):
            await transport.send(bucket, b"p%d" % n)
    got = await transport.receive(range(N_BUCKETS), 1000, 0)
    by_bucket: dict[int, list[str]] = {}
    for delivery in got:
        by_bucket.setdefault(delivery.bucket, []).append(delivery.delivery_id)
    calls = count_scripts(backend)
    counts = await asyncio.gather(*(transport.ack(b, ids + ids) for b, ids in by_bucket.items()), transport.ack(41, []))
    assert calls == ["ACK_MANY"]
    assert counts == [2] * 40 + [0]  # a repeated id counts once; nothing to ack makes no call
    assert await transport.pending_total(range(N_BUCKETS)) == 0


async def test_a_failed_call_fails_every_caller_in_it_and_the_next_turn_runs_again() -> None:
    seen: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        seen.append(items)
        if len(seen) == 1:
            raise BackendUnavailable("down")
        return [i * 10 for i in items]

    coalescer: Coalescer[int, int] = Coalescer(run, max_per_call=3)
    first = await asyncio.gather(*(coalescer.submit(i) for i in range(5)), return_exceptions=True)
    assert [type(r) for r in first[:3]] == [BackendUnavailable] * 3
    assert first[3:] == [30, 40]  # the second call of the queue (max 3 a call) went through
    assert await asyncio.gather(*(coalescer.submit(i) for i in range(2))) == [0, 10]
    assert seen == [[0, 1, 2], [3, 4], [0, 1]]


async def test_a_caller_cancelled_while_waiting_does_not_stop_the_others() -> None:
    release = asyncio.Event()

    async def run(items: list[int]) -> list[int]:
        await release.wait()
        return items

    coalescer: Coalescer[int, int] = Coalescer(run)
    tasks = [asyncio.ensure_future(coalescer.submit(i)) for i in range(3)]
    await asyncio.sleep(0)
    tasks[1].cancel()
    release.set()
    assert await tasks[0] == 0 and await tasks[2] == 2
    assert tasks[1].cancelled()
