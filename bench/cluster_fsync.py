"""Cost of the embedded Redis's ``appendfsync always`` against ``everysec``, for cross-URL sends.

Run: ``.venv/bin/python bench/cluster_fsync.py [--batches 2000] [--senders 1,16] [--rounds 3] [--dir D]``

One embedded redis-server per setting (unix socket, ``appendonly yes``, a
fresh directory under the system temp dir); ``--senders`` tasks send
pre-encoded batches of 100 URLs (~5.6 kB) to random buckets of 4096. With
one sender every send waits for its own fsync; with many, Redis fsyncs once
per event-loop round for every write of that round (group commit), so the cost
is shared. Prints batches/s and the mean latency of one send, best of
``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.redis import RedisBackend
from webgather.cluster.wire import encode_batch
from webgather.frontier.model import CrawlItem
from webgather.urls import fingerprint


def _payloads(n: int, rng: random.Random) -> list[bytes]:
    out = []
    for b in range(n):
        urls = [f"https://www.host{rng.randrange(10**6)}.test/{b}/{i}/page.html" for i in range(100)]
        out.append(encode_batch("bench", b, [CrawlItem(u, fingerprint(u), depth=2) for u in urls]))
    return out


async def _run(url: str, payloads: list[bytes], senders: int) -> tuple[float, float]:
    async with await RedisBackend.connect(url, "fsync") as backend:
        transport = backend.transport("s")
        queue = list(enumerate(payloads))
        latencies: list[float] = []

        async def sender() -> None:
            while queue:
                i, payload = queue.pop()
                t0 = time.perf_counter()
                await transport.send(i % 4096, payload)
                latencies.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(senders)))
        wall = time.perf_counter() - t0
        await backend.client.flushall()
    return len(payloads) / wall, 1000 * sum(latencies) / len(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--senders", default="1,16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the servers keep their AOF (default: the temp dir)")
    args = parser.parse_args()
    payloads = _payloads(args.batches, random.Random(1))
    for mode in ("everysec", "always"):
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp, EmbeddedRedis(Path(tmp), appendfsync=mode) as server:
            for senders in (int(s) for s in args.senders.split(",")):
                runs = [asyncio.run(_run(server.url, payloads, senders)) for _ in range(args.rounds)]
                rate, latency = max(runs)
                print(f"appendfsync {mode:8s} senders {senders:3d}: {rate:8.0f} batches/s, "
                      f"{latency:6.3f} ms per send")


if __name__ == "__main__":
    main()
