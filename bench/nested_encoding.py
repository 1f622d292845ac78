"""CPU and wall of one fetch whose body carries many nested Content-Encodings (issue 13, item 2).

A loopback server answers with ``--layers`` gzip codings listed in one
``Content-Encoding`` field: ``--zeros-mb`` MB of zeros wrapped in stored
(level 0) gzip layers, the outermost one compressed (level 9), so a body of
tens of KB unfolds into tens of MB per layer. The fetch goes through
:class:`HttpClient` with the project's default limits (``max_decoded_bytes``
50 MB, ``total_timeout_s`` 30 s); the process CPU time and the wall time of
the fetch are printed with its error kind.

    .venv/bin/python bench/nested_encoding.py                       # 20 layers, 45 MB
    .venv/bin/python bench/nested_encoding.py --client aiohttp --layers 3
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import time

from webgather.config import FetchConfig
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver
from webgather.clock import SystemClock


def nested_body(layers: int, zeros_bytes: int) -> bytes:
    body = b"\0" * zeros_bytes
    for _ in range(layers - 1):
        body = gzip.compress(body, compresslevel=0, mtime=0)
    return gzip.compress(body, compresslevel=9, mtime=0)


async def measure(client_name: str, layers: int, zeros_bytes: int) -> None:
    body = nested_body(layers, zeros_bytes)
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        f"Content-Encoding: {', '.join(['gzip'] * layers)}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    clock = SystemClock()
    config = FetchConfig(http_client=client_name)  # type: ignore[arg-type]
    async with HttpClient(config, Resolver(clock), clock) as client:
        cpu, wall = time.process_time(), time.perf_counter()
        result = await client.fetch(f"http://127.0.0.1:{port}/nested")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    server.close()
    await server.wait_closed()
    print(f"{client_name}: {layers} layers, body {len(body)} bytes: error={result.error} "
          f"decoded={len(result.body)} cpu={cpu:.3f} s wall={wall:.3f} s ({result.error_detail[:80]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=["native", "aiohttp"], default="native")
    parser.add_argument("--layers", type=int, default=20)
    parser.add_argument("--zeros-mb", type=float, default=45.0)
    args = parser.parse_args()
    asyncio.run(measure(args.client, args.layers, int(args.zeros_mb * 1e6)))


if __name__ == "__main__":
    main()
