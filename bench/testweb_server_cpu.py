"""Server CPU per page of the synthetic web's HTTP server, cold and warm render cache.

Serves a 100-host, 100,000-page web (``TestWebServer`` on uvloop, in this
process) and fetches N content pages with a concurrent aiohttp client in a
SEPARATE process (so the client's CPU is not counted). Server CPU is
``resource.getrusage(RUSAGE_SELF)`` (user + system) of the server process
between the start and the end of each pass, divided by the pages served:

* pass 1 ("cold"): every page rendered on first request;
* pass 2 ("warm"): the same URLs again, answered from the render cache.

Loopback only (127.0.x.y); the client resolves the web's names from its
resolve lines. Usage::

    .venv/bin/python bench/testweb_server_cpu.py [--pages 20000] [--hosts 100]
        [--pages-per-host 1000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import resource
import socket
import time
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from webgather.testweb import TestWebServer, WebModel, WebParams


class _Resolver(AbstractResolver):
    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        return [ResolveResult(hostname=host, host=self.table[host], port=port, family=socket.AF_INET, proto=0, flags=0)]

    async def close(self) -> None:
        return None


async def _fetch_all(urls: list[str], table: dict[str, str], concurrency: int) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(resolver=_Resolver(table), limit=concurrency, limit_per_host=0)
    statuses: dict[int, int] = {}
    received = 0
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal received
        while not queue.empty():
            url = queue.get_nowait()
            async with session.get(url, headers={"Accept-Encoding": "identity"}) as response:
                received += len(await response.read())
                statuses[response.status] = statuses.get(response.status, 0) + 1

    started = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return {"seconds": time.perf_counter() - started, "statuses": statuses, "bytes": received}


def _client(urls: list[str], table: dict[str, str], concurrency: int, out: Any) -> None:
    out.send(asyncio.run(_fetch_all(urls, table, concurrency)))


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _pass(srv: TestWebServer, urls: list[str], table: dict[str, str], concurrency: int) -> dict[str, Any]:
    receiver, sender = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("spawn").Process(target=_client, args=(urls, table, concurrency, sender))
    renders, requests = srv.renders, srv.requests
    cpu = _cpu_s()
    process.start()
    loop = asyncio.get_running_loop()
    result: dict[str, Any] = await loop.run_in_executor(None, receiver.recv)
    await loop.run_in_executor(None, process.join)
    spent = _cpu_s() - cpu
    served = srv.requests - requests
    result.update(server_cpu_s=round(spent, 3), requests=served, renders=srv.renders - renders,
                  cpu_ms_per_page=round(1000 * spent / max(1, served), 4), seconds=round(result["seconds"], 2))
    return result


async def main(args: argparse.Namespace) -> dict[str, Any]:
    built = time.perf_counter()
    model = WebModel(WebParams(seed=args.seed, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host))
    table = dict(line.split() for line in model.resolve_lines())
    build_s = time.perf_counter() - built
    async with TestWebServer(model, max_records=10_000) as srv:
        everything = list(model.content_urls(srv.port))
        urls = random.Random(args.seed).sample(everything, min(args.pages, len(everything)))
        cold = await _pass(srv, urls, table, args.concurrency)
        warm = await _pass(srv, urls, table, args.concurrency)
    return {"web": {"hosts": args.hosts, "pages": model.n_pages, "model_build_s": round(build_s, 2)},
            "fetched": len(urls), "concurrency": args.concurrency, "cold": cold, "warm": warm}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages-per-host", type=float, default=1000.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    import uvloop

    print(json.dumps(uvloop.run(main(arguments)), indent=2))
