"""The lean baseline of bench/vs_scrapy.py: a crawl loop with nothing but the crawl and its manners.

asyncio + aiohttp + uvloop, a fixed pool of workers around one queue of
*hosts* ready to fetch from, a ``set`` of seen URLs, selectolax (lexbor) for
links and ``urllib.parse`` for joining, plus the least canonical form that
keeps it from fetching one page under many spellings (lower-case host,
unreserved escapes decoded, no fragment). It obeys robots.txt (protego; the
``webgather`` group, one fetch per host before any of its pages; RFC 9309's
status rules) and keeps one connection per host (a host is held by one worker
at a time, and aiohttp's ``limit_per_host=1``), as webgather does, so the two
compare fairly. No politeness delay, archive, log, persistence or retries:
what it costs is the floor that a real crawler's CPU per page is compared
against. Hosts resolve through a static ``host address`` file only.

    python bench/lean_crawler.py SEED --domain web.test --resolve FILE --concurrency 256

Prints one JSON line: pages (responses received, robots.txt not counted),
errors, robots (robots.txt fetches), disallowed, hosts, seen, wall_s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import string
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import aiohttp
import uvloop
from aiohttp.abc import AbstractResolver, ResolveResult
from protego import Protego
from selectolax.lexbor import LexborHTMLParser

ROBOTS_AGENT = "webgather"  # the product token Scrapy's side also obeys (ROBOTSTXT_USER_AGENT)


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


@dataclass
class Host:
    """One host's queue, its robots.txt rules once fetched, and whether a worker holds it."""

    origin: str
    pending: deque[str] = field(default_factory=deque)
    robots: Protego | None = None
    robots_loaded: bool = False
    busy: bool = False

    def allows(self, url: str) -> bool:
        return self.robots is None or self.robots.can_fetch(url, ROBOTS_AGENT)


class Crawl:
    """A queue of hosts ready to fetch from: a host is in it at most once, so at most one worker
    (and one connection) is on a host at a time, and no worker waits on a busy host's connection."""

    def __init__(self, domain: str, session: aiohttp.ClientSession) -> None:
        self.domain, self.session = domain, session
        self.hosts: dict[str, Host] = {}
        self.seen: set[str] = set()
        self.ready: asyncio.Queue[Host] = asyncio.Queue()
        self.remaining = 0  # URLs queued or in flight; 0 ends the crawl
        self.done = asyncio.Event()
        self.counts = {"pages": 0, "errors": 0, "robots": 0, "disallowed": 0}

    def add(self, url: str) -> None:
        if url in self.seen:
            return
        self.seen.add(url)
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        host = self.hosts.get(origin)
        if host is None:
            host = self.hosts[origin] = Host(origin)
        host.pending.append(url)
        self.remaining += 1
        if not host.busy:
            host.busy = True
            self.ready.put_nowait(host)

    async def work(self) -> None:
        while True:
            host = await self.ready.get()
            try:
                if not host.robots_loaded:
                    await self.load_robots(host)
                url = host.pending.popleft()
                if host.allows(url):
                    await self.fetch(url)
                else:
                    self.counts["disallowed"] += 1
            finally:
                self.remaining -= 1
                if host.pending:
                    self.ready.put_nowait(host)
                else:
                    host.busy = False
                if self.remaining == 0:
                    self.done.set()

    async def load_robots(self, host: Host) -> None:
        """RFC 9309: 2xx parsed, other 4xx allow everything, 5xx or no answer disallow everything."""
        host.robots_loaded = True
        self.counts["robots"] += 1
        try:
            async with self.session.get(host.origin + "/robots.txt") as resp:
                body = await resp.read()
                if 200 <= resp.status < 300:
                    host.robots = Protego.parse(body.decode("utf-8", "replace"))
                elif resp.status >= 500:
                    host.robots = Protego.parse("User-agent: *\nDisallow: /\n")
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            host.robots = Protego.parse("User-agent: *\nDisallow: /\n")

    async def fetch(self, url: str) -> None:
        try:
            async with self.session.get(url, allow_redirects=False) as resp:
                body = await resp.read()
                self.counts["pages"] += 1
                if resp.status == 200 and resp.content_type == "text/html":
                    for link in links_of(url, body):
                        target = in_scope(link, self.domain)
                        if target is not None:
                            self.add(target)
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            self.counts["errors"] += 1


async def crawl(seed: str, domain: str, table: dict[str, str], concurrency: int) -> dict[str, Any]:
    # limit_per_host=1 enforces what the ready queue already ensures: one connection per host
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=1, resolver=StaticResolver(table))
    timeout = aiohttp.ClientTimeout(total=30)
    started = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        state = Crawl(domain, session)
        state.add(seed)
        workers = [asyncio.create_task(state.work()) for _ in range(concurrency)]
        await state.done.wait()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return {**state.counts, "hosts": len(state.hosts), "seen": len(state.seen),
            "wall_s": round(time.perf_counter() - started, 3)}


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
