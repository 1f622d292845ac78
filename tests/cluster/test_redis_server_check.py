"""RedisBackend.connect checks the server before it builds the backend: a server older than 6.2 is
refused in one line naming it without its password, its connection closed; a good one gives a
backend that knows its URL."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.redis import RedisBackend
from webgather.errors import BackendUnavailable


async def test_an_old_server_is_refused_and_its_connection_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[bool] = []

    async def old_info(self: aioredis.Redis, section: str | None = None, *args: object) -> dict[str, str]:
        return {"redis_version": "6.0.16"}

    async def aclose(self: aioredis.Redis, close_connection_pool: bool | None = None) -> None:
        closed.append(True)

    monkeypatch.setattr(aioredis.Redis, "info", old_info)
    monkeypatch.setattr(aioredis.Redis, "aclose", aclose)
    with pytest.raises(BackendUnavailable) as info:
        await RedisBackend.connect("redis://:secret@127.0.0.1:1/0", "c")
    assert str(info.value) == "Redis at redis://:***@127.0.0.1:1/0 is version 6.0.16; webgather needs >= 6.2"
    assert closed == [True]


async def test_a_backend_keeps_its_url_and_names_the_server_without_the_password(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path / "redis") as server:
        async with await RedisBackend.connect(server.url, "c") as backend:
            assert (backend.url, backend.where) == (server.url, server.url)  # no password: nothing hidden
            assert await backend.coordinator().incr("probe") == 1
