"""The lean baseline of bench/vs_scrapy.py: a crawl loop with nothing but the crawl.

asyncio + aiohttp + uvloop, a fixed pool of workers around one queue (the
500-lines pattern), a ``set`` of seen URLs, selectolax (lexbor) for links and
``urllib.parse`` for joining, plus the least canonical form that keeps it
from fetching one page under many spellings (lower-case host, unreserved
escapes decoded, no fragment). No robots.txt, politeness, archive,
persistence or retries: what it costs is the floor that a real crawler's CPU
per page is compared against. Hosts resolve through a static ``host
address`` file.

    python bench/lean_crawler.py SEED --domain web.test --resolve FILE --concurrency 256

Prints one JSON line: pages (responses received), errors, wall_s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import string
import time
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import aiohttp
import uvloop
from aiohttp.abc import AbstractResolver, ResolveResult
from selectolax.lexbor import LexborHTMLParser


class StaticResolver(AbstractResolver):
    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        address = self.table[host]  # KeyError: only mapped (loopback) hosts are ever contacted
        return [{"hostname": host, "host": address, "port": port, "family": socket.AF_INET,
                 "proto": 0, "flags": socket.AI_NUMERICHOST}]

    async def close(self) -> None:
        pass


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def _unescape(match: re.Match[str]) -> str:
    char = chr(int(match[1], 16))
    return char if char in _UNRESERVED else "%" + match[1].upper()


def in_scope(url: str, domain: str) -> str | None:
    """The URL in canonical form if it is an http(s) URL inside ``domain``, else None."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not (host == domain or host.endswith("." + domain)):
        return None
    path = _ESCAPE.sub(_unescape, parts.path) if "%" in parts.path else parts.path
    return urlunsplit((parts.scheme, parts.netloc.lower(), path or "/", parts.query, ""))


def links_of(url: str, body: bytes) -> list[str]:
    tree = LexborHTMLParser(body)
    base = tree.css_first("base[href]")
    base_url = urljoin(url, base.attributes.get("href") or "") if base is not None else url
    out = []
    for node in tree.css("a[href], area[href]"):
        href = node.attributes.get("href")
        if href:
            out.append(urljoin(base_url, href.strip()))
    return out


async def crawl(seed: str, domain: str, table: dict[str, str], concurrency: int) -> dict[str, Any]:
    seen = {seed}
    queue: asyncio.Queue[str] = asyncio.Queue()
    queue.put_nowait(seed)
    counts = {"pages": 0, "errors": 0}
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0, resolver=StaticResolver(table))
    timeout = aiohttp.ClientTimeout(total=30)

    async def work(session: aiohttp.ClientSession) -> None:
        while True:
            url = await queue.get()
            try:
                async with session.get(url, allow_redirects=False) as resp:
                    body = await resp.read()
                    counts["pages"] += 1
                    if resp.status == 200 and resp.content_type == "text/html":
                        for link in links_of(url, body):
                            target = in_scope(link, domain)
                            if target is not None and target not in seen:
                                seen.add(target)
                                queue.put_nowait(target)
            except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
                counts["errors"] += 1
            finally:
                queue.task_done()

    started = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        workers = [asyncio.create_task(work(session)) for _ in range(concurrency)]
        await queue.join()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return {**counts, "seen": len(seen), "wall_s": round(time.perf_counter() - started, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed")
    parser.add_argument("--domain", required=True)
    parser.add_argument("--resolve", required=True, help='"host address" lines')
    parser.add_argument("--concurrency", type=int, default=256)
    args = parser.parse_args()
    with open(args.resolve, encoding="ascii") as f:
        table = dict(line.split()[:2] for line in f if line.strip() and not line.startswith("#"))
    print(json.dumps(uvloop.run(crawl(args.seed, args.domain, table, args.concurrency))))


if __name__ == "__main__":
    main()
