"""The end-of-crawl check's count of unacked batches over every bucket is one script call on Redis
(it runs on every idle beat of the coordinating node; a pipeline of one XLEN per bucket made the
client pack and parse 4096 commands per beat)."""

from __future__ import annotations

from pathlib import Path

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.redis import RedisBackend

N_BUCKETS = 512


async def _script_calls(backend: RedisBackend) -> int:
    stats = await backend.client.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


async def test_pending_total_over_every_bucket_is_one_command(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path / "redis") as server:
        backend = await RedisBackend.connect(server.url, "pending", N_BUCKETS)
        try:
            transport = backend.transport("a")
            for bucket in (0, 7, N_BUCKETS - 1, 7):
                await transport.send(bucket, b"batch")
            assert await transport.pending_total(range(N_BUCKETS)) == 4  # scripts loaded, counted once
            before = await _script_calls(backend)
            assert await transport.pending_total(range(N_BUCKETS)) == 4
            assert await _script_calls(backend) - before == 1  # one script call: no XLEN per bucket sent
            assert await transport.pending_total([]) == 0
        finally:
            await backend.aclose()
