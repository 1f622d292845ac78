"""Cross-URL transport speed: batches/s and URLs/s through each backend, bytes per URL.

Run: ``.venv/bin/python bench/cluster_transport.py [--batches 2000] [--senders 4] [--seed 1]``

A batch is 100 cross URLs drawn from a seeded ``random.Random`` (realistic
shapes: ``https://www.<word><n>.<tld>/<1-4 segments>[.html][?query]``, depth
1-6, breadth-first priority). The bench prints:

1. the wire: mean URL length, payload bytes per URL (the documents bound a
   cross URL at 128 B), and encode/decode time per batch;
2. end to end, per backend (``inprocess``; ``redis`` = an embedded
   redis-server on a unix socket with ``appendonly yes``): ``--senders``
   tasks send pre-encoded batches to random buckets of a 4096-bucket table
   while one receiver reads (``max_batches=64``), decodes and acks them all;
   batches/s and URLs/s over the whole run;
3. Redis only: the cost of one ``receive`` on a node that owns 1024 buckets of
   which 8 have data, with the ``ready`` hint set (what the backend does)
   against a script that reads every one of the 1024 streams, and against one
   plain ``XREADGROUP`` over the 1024 streams.

Figures on the shared 2-core dev machine (noisy: runs vary up to 2x), 4 senders,
2000 batches of 100 URLs:

- wire: mean URL 50.1 B -> 56.4 B per URL on the wire (URL + 6 B columns + the
  header spread over 100 URLs); encode 80-190 us, decode 230-600 us per batch.
  Decoding is dominated by building 100 frozen ``CrawlItem``\ s (~2 us each)
  and recomputing 100 fingerprints (~1 us each).
- inprocess: ~24,000 batches/s (2.4 M URLs/s) moving payloads; ~1,600 batches/s
  (160 k URLs/s) with decoding.
- redis: ~3,000 batches/s (300 k URLs/s) moving payloads through one embedded
  server; ~1,100 batches/s (110 k URLs/s) with decoding in the one receiver.
- one redis ``receive`` by a node owning 1024 buckets: ~0.13 ms idle and ~0.36
  ms with 8 buckets holding data through the ready set and interest set,
  against ~2.3-2.9 ms to name all 1024 streams (Lua loop or one XREADGROUP).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.redis import GROUP, RedisBackend
from webgather.cluster.transport import Backend
from webgather.cluster.wire import UrlBatch, decode, encode_batch
from webgather.frontier.model import CrawlItem
from webgather.urls import canonicalize, fingerprint

WORDS = ("news shop blog forum travel music sport health science photo city market games "
         "library school bank weather movie food cars").split()
TLDS = ("com", "org", "net", "cn", "edu.cn", "de", "co.uk")
N_BUCKETS = 4096
BATCH_URLS = 100

SCAN_ALL = """
local out = {}
for i = 1, #KEYS do
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 64, 'STREAMS', KEYS[i], '>')
  if r then for _, e in ipairs(r[1][2]) do out[#out + 1] = e[1] end end
end
return out
"""


def make_url(rng: random.Random) -> str:
    host = f"www.{rng.choice(WORDS)}{rng.randrange(1000)}.{rng.choice(TLDS)}"
    segments = [rng.choice(WORDS) + (f"-{rng.randrange(100)}" if rng.random() < 0.5 else "")
                for _ in range(rng.randint(1, 4))]
    path = "/".join(segments) + rng.choice(["", ".html", "/", ".php"])
    query = f"?id={rng.randrange(100_000)}&page={rng.randrange(10)}" if rng.random() < 0.25 else ""
    url = canonicalize(f"https://{host}/{path}{query}")
    assert url is not None
    return url


def make_batch(rng: random.Random) -> list[CrawlItem]:
    items = []
    for _ in range(BATCH_URLS):
        url, depth = make_url(rng), rng.randint(1, 6)
        items.append(CrawlItem(url, fingerprint(url), depth, 0, 0, float(depth)))
    return items


def best_us(fn: Callable[[], object], runs: int) -> float:
    rounds = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(runs):
            fn()
        rounds.append((time.perf_counter() - start) / runs * 1e6)
    return min(rounds)


def report_wire(rng: random.Random) -> list[bytes]:
    batches = [make_batch(rng) for _ in range(50)]
    payloads = [encode_batch("node-01", i, b) for i, b in enumerate(batches)]
    url_len = statistics.mean(len(it.url) for b in batches for it in b)
    per_url = statistics.mean(len(p) for p in payloads) / BATCH_URLS
    enc = best_us(lambda: encode_batch("node-01", 1, batches[0]), 300)
    dec = best_us(lambda: decode(payloads[0]), 300)
    print(f"wire: mean URL {url_len:.1f} B, {per_url:.1f} B per URL on the wire "
          f"(overhead {per_url - url_len:.1f} B; bound 128 B); batch of {BATCH_URLS}: "
          f"encode {enc:.0f} us, decode {dec:.0f} us")
    return payloads


async def end_to_end(backend: Backend, payloads: list[bytes], n_batches: int, senders: int,
                     decoding: bool = True) -> tuple[float, float]:
    rng = random.Random(7)
    plan = [(rng.randrange(N_BUCKETS), payloads[i % len(payloads)]) for i in range(n_batches)]
    receiver = backend.transport("receiver")
    every = list(range(N_BUCKETS))

    async def send(part: list[tuple[int, bytes]]) -> None:
        node = backend.transport("sender")
        for bucket, payload in part:
            await node.send(bucket, payload)

    async def receive() -> int:
        urls = done = 0
        while done < n_batches:
            got = await receiver.receive(every, 64, 1.0)
            by_bucket: dict[int, list[str]] = {}
            for d in got:
                if decoding:
                    message = decode(d.payload)
                    assert isinstance(message, UrlBatch)
                urls += BATCH_URLS
                by_bucket.setdefault(d.bucket, []).append(d.delivery_id)
            for bucket, ids in by_bucket.items():
                await receiver.ack(bucket, ids)
            done += len(got)
        return urls

    start = time.perf_counter()
    results = await asyncio.gather(receive(), *(send(plan[i::senders]) for i in range(senders)))
    elapsed = time.perf_counter() - start
    return n_batches / elapsed, results[0] / elapsed


async def poll_costs(backend: RedisBackend, payload: bytes) -> None:
    owned = list(range(1024))
    node = backend.transport("owner")
    for bucket in owned:  # every stream exists, as in a running crawl
        await node.send(bucket, payload)
    while await node.receive(owned, 1024, 0):
        pass
    await backend.client.delete(backend.keys.ready)
    scan = backend.client.register_script(SCAN_ALL)
    keys = [backend.keys.stream(b) for b in owned]

    async def refill() -> None:
        for bucket in owned[::128]:
            await node.send(bucket, payload)

    async def hinted() -> object:
        return await node.receive(owned, 64, 0)

    async def scanned() -> object:
        return await scan(keys=keys, args=[GROUP, "owner"])

    async def plain() -> object:
        return await backend.client.xreadgroup(GROUP, "owner", dict.fromkeys(keys, ">"), count=64)

    for name, call in (("ready-set hint (used)", hinted), ("Lua scan of all 1024", scanned),
                       ("one XREADGROUP of 1024", plain)):
        busy, idle = await _time_call(call, refill), await _time_call(call, None)
        print(f"  {name:24s}: {busy:7.0f} us with 8 buckets holding data, {idle:7.0f} us when all are empty")


async def _time_call(call: Callable[[], Awaitable[object]], refill: Callable[[], Awaitable[None]] | None) -> float:
    samples = []
    for _ in range(20):
        if refill is not None:
            await refill()
        start = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - start) * 1e6)
    return min(samples)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--appendfsync", default="always", choices=["always", "everysec", "no"])
    args = parser.parse_args()
    payloads = report_wire(random.Random(args.seed))
    for decoding in (False, True):
        what = "send + receive + decode + ack" if decoding else "send + receive + ack, no decode"
        bps, ups = await end_to_end(InProcessHub(N_BUCKETS), payloads, args.batches, args.senders, decoding)
        print(f"inprocess: {bps:7,.0f} batches/s, {ups:9,.0f} URLs/s ({what})")
    with tempfile.TemporaryDirectory() as directory:
        async with EmbeddedRedis(directory, appendfsync=args.appendfsync) as server:
            async with await RedisBackend.connect(server.url, "bench", N_BUCKETS) as backend:
                for decoding in (False, True):
                    await backend.client.flushdb()
                    what = "decode" if decoding else "no decode"
                    bps, ups = await end_to_end(backend, payloads, args.batches, args.senders, decoding)
                    print(f"redis:     {bps:7,.0f} batches/s, {ups:9,.0f} URLs/s ({what}; embedded, unix socket, AOF)")
                await backend.client.flushdb()
                print("redis receive() on a node owning 1024 buckets:")
                await poll_costs(backend, payloads[0])

if __name__ == "__main__":
    asyncio.run(main())
