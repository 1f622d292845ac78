"""Redis backend failure modes: bad URLs, a server killed and restarted mid-crawl."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from process_helpers import own_redis_servers
from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.mapping import initial, plan_join
from webgather.cluster.redis import RedisBackend, redact_url
from webgather.errors import BackendUnavailable, ClusterError


def _closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when this returns


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    # "always": with "everysec" a loaded machine may postpone the AOF write past the reply
    # (Redis documents up to 2 s of loss), and these tests kill the server right after acks
    with EmbeddedRedis(tmp_path / "redis", appendfsync="always") as running:
        yield running
    assert own_redis_servers() == []


async def test_unreachable_tcp_url_is_one_line_backend_unavailable() -> None:
    url = f"redis://127.0.0.1:{_closed_loopback_port()}/0"
    with pytest.raises(BackendUnavailable) as info:
        await RedisBackend.connect(url, "c")
    message = str(info.value)
    assert "\n" not in message and f"cannot reach Redis at {url}" in message


async def test_missing_unix_socket_is_backend_unavailable(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="cannot reach Redis at unix://"):
        await RedisBackend.connect(f"unix://{tmp_path}/nothing.sock", "c")


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "redis://127.0.0.1:notaport", "nonsense"])
async def test_malformed_url_is_backend_unavailable(url: str) -> None:
    with pytest.raises(BackendUnavailable) as info:
        await RedisBackend.connect(url, "c")
    assert "\n" not in str(info.value)


async def test_password_never_appears_in_messages() -> None:
    url = f"redis://user:s3cret@127.0.0.1:{_closed_loopback_port()}"
    with pytest.raises(BackendUnavailable) as info:
        await RedisBackend.connect(url, "c")
    assert "s3cret" not in str(info.value) and "user:***@" in str(info.value)
    assert redact_url("redis://127.0.0.1:1") == "redis://127.0.0.1:1"


@pytest.mark.parametrize("crawl", ["", "a b", "x{y}", "c" * 65])
async def test_bad_crawl_names_are_refused_before_connecting(crawl: str) -> None:
    with pytest.raises(ClusterError, match="crawl name"):
        await RedisBackend.connect("redis://127.0.0.1:1", crawl)


async def test_two_crawls_share_a_server_without_seeing_each_other(server: EmbeddedRedis) -> None:
    async with await RedisBackend.connect(server.url, "one", 16) as one, \
            await RedisBackend.connect(server.url, "two", 16) as two:
        await one.transport("a").send(3, b"one's")
        await one.coordinator().incr("pages", 1)
        assert await two.transport("a").receive([3], 5, 0) == []
        assert await two.coordinator().counters() == {}
        keys = sorted(k.decode() for k in await one.client.keys("*"))
        assert all(k.startswith(("wg:{one}:", "wg:{two}:")) for k in keys)
        assert {k.split(":")[2] for k in keys if k.startswith("wg:{one}:")} >= {"b", "ready", "counters"}


async def test_server_killed_and_restarted_keeps_acked_state(server: EmbeddedRedis) -> None:
    async with await RedisBackend.connect(server.url, "crash", 16) as backend:
        node, coord = backend.transport("a"), backend.coordinator()
        ids = [await node.send(2, payload) for payload in (b"acked", b"read", b"unread")]
        acked, read = await node.receive([2], 2, 0)
        assert await node.ack(2, [acked.delivery_id]) == 1
        table = initial(["a", "b"], 16)
        assert await coord.cas_table(None, table)
        assert await coord.incr("pages", 7) == 7
        await coord.register_crawl({"n_buckets": 16})

        server.kill()
        for call in (lambda: node.send(2, b"lost"), lambda: node.receive([2], 5, 0), coord.get_table,
                     lambda: coord.incr("pages", 1), lambda: node.ack(2, [read.delivery_id])):
            with pytest.raises(BackendUnavailable):
                await call()

        server.start()  # same directory: the AOF is replayed
        assert await node.pending_count(2) == 2  # "read" (unacked) and "unread"
        assert await coord.get_table() == table
        assert await coord.counters() == {"pages": 7}
        assert await coord.register_crawl({"n_buckets": 16}) == {"n_buckets": 16}
        assert [(d.delivery_id, d.payload) for d in await node.claim_stale([2], 0.0)] == [(ids[1], b"read")]
        assert [(d.delivery_id, d.payload) for d in await node.receive([2], 5, 0)] == [(ids[2], b"unread")]
        assert await coord.cas_table(table.version, plan_join(table, "c"))


async def test_operations_recover_once_the_server_is_back(server: EmbeddedRedis) -> None:
    async with await RedisBackend.connect(server.url, "flap", 16) as backend:
        node = backend.transport("a")
        await node.send(1, b"before")
        server.kill()
        with pytest.raises(BackendUnavailable):
            await node.pending_count(1)
        await asyncio.to_thread(server.start)
        await node.send(1, b"after")
        assert [d.payload for d in await node.receive([1], 5, 0)] == [b"before", b"after"]


async def test_blocking_receive_raises_when_the_server_dies(server: EmbeddedRedis) -> None:
    async with await RedisBackend.connect(server.url, "die", 16) as backend:
        waiting = asyncio.ensure_future(backend.transport("a").receive([1], 5, 3.0))
        await asyncio.sleep(0.1)
        server.kill()
        with pytest.raises(BackendUnavailable):
            await waiting


async def test_corrupt_stored_table_is_a_cluster_error(server: EmbeddedRedis) -> None:
    async with await RedisBackend.connect(server.url, "bad", 16) as backend:
        await backend.client.hset(backend.keys.table, mapping={"version": "3", "body": "{not json"})
        with pytest.raises(ClusterError, match="bucket table"):
            await backend.coordinator().get_table()
        await backend.client.hset(backend.keys.table, mapping={"body": '{"version": 4, "n_buckets": 1, "owners": ["a"]}'})
        with pytest.raises(ClusterError, match="disagrees"):
            await backend.coordinator().get_table()


async def test_reads_survive_a_lost_interest_set_and_readers_with_other_lists(server: EmbeddedRedis) -> None:
    async with await RedisBackend.connect(server.url, "interest", 16) as backend:
        sender, first, second = backend.transport("s"), backend.transport("a"), backend.transport("a")
        assert await first.receive([1, 2], 5, 0) == []
        for key in await backend.client.keys("wg:{interest}:i:*"):
            await backend.client.delete(key)  # expired, or the server lost it
        await sender.send(2, b"two")
        await sender.send(3, b"three")
        assert [d.payload for d in await first.receive([1, 2], 5, 0)] == [b"two"]
        assert [d.payload for d in await second.receive([3], 5, 0)] == [b"three"]
        await sender.send(1, b"one")
        assert [d.payload for d in await first.receive([1, 2], 5, 0)] == [b"one"]
        assert len(await backend.client.keys("wg:{interest}:i:*")) == 2


async def test_an_exhausted_connection_pool_waits_then_is_its_own_error_not_an_outage(
        server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch) -> None:
    import webgather.cluster.redis as redis_backend
    from webgather.errors import BackendBusy

    monkeypatch.setattr(redis_backend, "POOL_CONNECTIONS", 2)
    async with await RedisBackend.connect(server.url, "pool", 16, socket_timeout_s=0.5) as backend:
        coordinator = backend.coordinator()
        pool = backend.client.connection_pool
        held = [await pool.get_connection() for _ in range(2)]  # every connection busy (a recovery's sends)
        waiter = asyncio.create_task(coordinator.incr("x"))
        await asyncio.sleep(0.1)
        await pool.release(held.pop())  # one comes free within the pool's wait: the command goes through
        assert await waiter == 1
        held.append(await pool.get_connection())
        with pytest.raises(BackendBusy) as caught:  # none comes free: waited, then one clear line
            await coordinator.incr("x")
        message = str(caught.value)
        assert "all 2 connections of this node's Redis client are in use" in message
        assert "cannot reach" not in message and "\n" not in message
        for connection in held:
            await pool.release(connection)
        assert await coordinator.incr("x") == 2


async def test_a_send_on_a_closed_transport_is_an_outage_not_a_traceback(server: EmbeddedRedis) -> None:
    """After a link reset redis-py can raise ``RuntimeError: unable to perform operation on <TCPTransport
    closed=True ...>; the handler is closed``; the boundary makes it BackendUnavailable (the outage path)."""
    closed = "unable to perform operation on <TCPTransport closed=True reading=False 0x7f>; the handler is closed"

    async def reset(*args: object, **kwargs: object) -> object:
        raise RuntimeError(closed)

    async with await RedisBackend.connect(server.url, "closedlink", 4) as backend:
        backend.scripts["SEND"] = reset  # type: ignore[assignment]
        with pytest.raises(BackendUnavailable, match="handler is closed"):
            await backend.transport("n1").send(0, b"x")
        with pytest.raises(RuntimeError, match="something else"):  # a bug of ours stays a bug
            with backend.errors():
                raise RuntimeError("something else")


async def test_a_flush_between_writing_and_reading_the_interest_set_is_an_outage_not_a_crash(
        server: EmbeddedRedis) -> None:
    """A FLUSHALL right after a reader wrote its bucket interest set: the read found it gone twice and raised
    a bare ClusterError, which no loop handles: the node died with a traceback (exit 1; the nemesis's s3 seed
    120). Now it is BackendUnavailable: the receive loop retries, and the node's beat sees the crawl's data
    lost (its marker gone) and stops with exit 6."""
    async with await RedisBackend.connect(server.url, "flushed", 16) as backend:
        run = backend.run

        async def flushing(name: str, keys: list[str], args: list[object]) -> object:
            result = await run(name, keys, args)
            if name == "INTEREST":
                await backend.client.flushall()
            return result

        backend.run = flushing  # type: ignore[method-assign]
        with pytest.raises(BackendUnavailable, match="interest set vanished"):
            await backend.transport("a").receive([1, 2], 5, 0)
