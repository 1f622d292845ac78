"""The Crawlee side of bench/vs_scrapy.py; runs under bench/.venv-crawlee's Python (crawlee[parsel,httpx]).

A ``ParselCrawler`` following every ``<a href>`` (``enqueue_links``) inside
``--domain`` and its subdomains, robots.txt obeyed (``respect_robots_txt_file``),
no delay, ``--concurrency`` tasks (the autoscaled pool pinned there: minimum =
desired = maximum), Crawlee's default retries. ``--storage file`` is Crawlee's
default file-system storage (request queue, key-value store and dataset as
JSON files) under ``--storage-dir``; ``--storage memory`` keeps them in memory.

Host names resolve through a static ``host address`` file and nothing else:
Crawlee's default HTTP client (impit, in Rust) has no resolver override, so
this uses Crawlee's ``HttpxHttpClient`` with an httpcore network backend that
maps each host name to its address from the file and refuses every other name
(no DNS lookup is ever made; the Host header and URLs keep the names).

    python bench/crawlee_crawler.py SEED --domain web.test --resolve FILE --stats OUT.json \
        --storage file --storage-dir DIR --concurrency 256

Writes Crawlee's final statistics plus ``pages`` (responses received for
pages, any status; robots.txt fetches are not counted) to ``--stats``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2
from crawlee import ConcurrencySettings
from crawlee.configuration import Configuration
from crawlee.crawlers import ParselCrawler, ParselCrawlingContext
from crawlee.http_clients import HttpxHttpClient
from crawlee.storage_clients import FileSystemStorageClient, MemoryStorageClient
from httpcore2._backends.auto import AutoBackend
from httpcore2._backends.base import AsyncNetworkStream


class StaticBackend(AutoBackend):
    """httpcore's network backend that connects to the mapped address of a host name, never resolving one."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> AsyncNetworkStream:
        address = self.table.get(host.lower())
        if address is None:  # only the (loopback) hosts of the file are ever contacted
            raise httpcore2.ConnectError(f"{host} is not in the resolve file")
        return await super().connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                         socket_options=socket_options)


class StaticHttpxClient(HttpxHttpClient):
    """Crawlee's httpx client whose connection pools use :class:`StaticBackend`."""

    def __init__(self, table: dict[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._backend = StaticBackend(table)

    def _get_client(self, proxy_url: str | None) -> httpx2.AsyncClient:
        client = super()._get_client(proxy_url)
        pool = client._transport._pool  # the transport Crawlee builds (it ignores a transport= argument)
        if not isinstance(pool, httpcore2.AsyncConnectionPool):
            raise TypeError(f"unexpected httpx pool {type(pool).__name__}")
        pool._network_backend = self._backend
        return client


def check_client_internals() -> None:
    """StaticHttpxClient reaches into Crawlee's and httpx2's internals: fail in one line if they moved."""
    pool = getattr(httpx2.AsyncHTTPTransport(), "_pool", None)
    if not hasattr(HttpxHttpClient, "_get_client") or not isinstance(pool, httpcore2.AsyncConnectionPool) \
            or not hasattr(pool, "_network_backend"):
        raise SystemExit("crawlee_crawler: this Crawlee/httpx2 no longer has the hooks the static resolver uses "
                         "(HttpxHttpClient._get_client, AsyncHTTPTransport._pool._network_backend)")


def read_table(path: str) -> dict[str, str]:
    with open(path, encoding="ascii") as f:
        rows = [line.split()[:2] for line in f if line.strip() and not line.startswith("#")]
    return {host.lower(): address for host, address in rows}


async def crawl(args: argparse.Namespace) -> dict[str, Any]:
    table = read_table(args.resolve)
    if args.storage == "file":
        storage = FileSystemStorageClient()
        configuration = Configuration(storage_dir=args.storage_dir)
    else:
        storage, configuration = MemoryStorageClient(), Configuration()
    scope = re.compile(r"^https?://([^/?#@]*\.)?" + re.escape(args.domain) + r"(:\d+)?([/?#]|$)", re.IGNORECASE)
    crawler = ParselCrawler(
        http_client=StaticHttpxClient(table),
        storage_client=storage,
        configuration=configuration,
        respect_robots_txt_file=True,
        concurrency_settings=ConcurrencySettings(min_concurrency=args.concurrency, max_concurrency=args.concurrency,
                                                 desired_concurrency=args.concurrency),
    )

    @crawler.router.default_handler
    async def follow(context: ParselCrawlingContext) -> None:
        await context.enqueue_links(strategy="all", include=[scope])

    final = await crawler.run([args.seed])
    stats: dict[str, Any] = dict(final.to_dict())
    by_status = crawler.statistics.state.requests_with_status_code
    stats["requests_with_status_code"] = dict(by_status)
    stats["pages"] = sum(by_status.values())
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed")
    parser.add_argument("--domain", required=True)
    parser.add_argument("--resolve", required=True, help='"host address" lines')
    parser.add_argument("--stats", required=True)
    parser.add_argument("--storage", choices=("file", "memory"), default="file")
    parser.add_argument("--storage-dir", default="./storage", help="root of the file storage (--storage file)")
    parser.add_argument("--concurrency", type=int, default=256)
    args = parser.parse_args()
    check_client_internals()
    stats = asyncio.run(crawl(args))
    with open(args.stats, "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=1)


if __name__ == "__main__":
    main()
