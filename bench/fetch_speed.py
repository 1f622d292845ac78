"""Per-fetch CPU cost of webgather.fetch.HttpClient against a loopback server.

The server runs in a separate process (this script with ``--serve``; it prints
its port), so the CPU time measured here is the client's alone: every request
is a keep-alive GET of a small page, answered from memory. For context the same
load runs through HttpClient's aiohttp transport (``http_client = "aiohttp"``)
and through a bare aiohttp session (no resolver, caps, header capture or
decoding): what our own HTTP/1.1 transport saves, and what the layer costs.

    .venv/bin/python bench/fetch_speed.py --requests 20000 --concurrency 32

Only 127.0.0.1 is used; the server process is ended (by its PID) on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

import aiohttp
import uvloop

from webgather.config import FetchConfig
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver
from webgather.clock import SystemClock


def page(body_bytes: int, compress: bool) -> bytes:
    text = (b"<html><body>" + b"<a href='/p%d'>link</a> " * 400)[:body_bytes] + b"</body></html>"
    body = gzip.compress(text) if compress else text
    extra = b"Content-Encoding: gzip\r\n" if compress else b""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n%sContent-Length: %d\r\n\r\n" % (extra, len(body))
    return head + body


class _Serve(asyncio.Protocol):
    response = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        count = self.buffer.count(b"\r\n\r\n")
        if count:
            self.buffer = self.buffer[self.buffer.rindex(b"\r\n\r\n") + 4 :]
            self.transport.write(self.response * count)


async def serve(body_bytes: int, compress: bool) -> None:
    _Serve.response = page(body_bytes, compress)
    server = await asyncio.get_running_loop().create_server(_Serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


async def drive(fetch: Callable[[str], Awaitable[int]], url: str, requests: int, concurrency: int) -> dict[str, float]:
    for _ in range(200):  # warm up: connections, caches
        await fetch(url)
    left = requests

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            if await fetch(url) != 200:
                raise SystemExit("unexpected status")

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"cpu_us_per_fetch": 1e6 * cpu / requests, "fetches_per_s": requests / wall}


async def run_webgather(url: str, requests: int, concurrency: int, transport: str) -> dict[str, float]:
    clock = SystemClock()
    config = FetchConfig(concurrency=concurrency, connect_timeout_s=5.0, total_timeout_s=10.0, http_client=transport)  # type: ignore[arg-type]
    resolver = Resolver(clock, static={"bench.web.test": "127.0.0.1"})
    async with HttpClient(config, resolver, clock) as client:

        async def fetch(u: str) -> int:
            result = await client.fetch(u)
            if result.error is not None or not result.body:
                raise SystemExit(f"fetch failed: {result.error} {result.error_detail}")
            return result.status or 0

        return await drive(fetch, url, requests, concurrency)


async def run_bare_aiohttp(url: str, requests: int, concurrency: int) -> dict[str, float]:
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def fetch(u: str) -> int:
            async with session.get(u, allow_redirects=False) as resp:
                await resp.read()
                return resp.status

        return await drive(fetch, url.replace("bench.web.test", "127.0.0.1"), requests, concurrency)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--body-bytes", type=int, default=4000)
    parser.add_argument("--gzip", action="store_true", help="serve the page gzip-encoded")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        uvloop.run(serve(args.body_bytes, args.gzip))
        return 0
    cmd = [sys.executable, __file__, "--serve", "--body-bytes", str(args.body_bytes)] + (["--gzip"] if args.gzip else [])
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        url = f"http://bench.web.test:{port}/page"
        report = {
            "requests": args.requests, "concurrency": args.concurrency,
            "body_bytes": args.body_bytes, "gzip": args.gzip, "loop": "uvloop",
            "webgather": uvloop.run(run_webgather(url, args.requests, args.concurrency, "native")),
            "webgather_via_aiohttp": uvloop.run(run_webgather(url, args.requests, args.concurrency, "aiohttp")),
            "bare_aiohttp": uvloop.run(run_bare_aiohttp(url, args.requests, args.concurrency)),
        }  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
