"""A crawl of sites whose robots.txt names an index of 2,000 sitemaps of 50,000 URLs each.

The node must stay responsive and bounded: SIGTERM ends it within 5 s whatever it is parsing or
routing (it took 9.6 s with the index of 50,000 of the probe; with eight such hosts, each with a
sitemap of 50,000 URLs being parsed or routed at once, 6-7 s), and a host's sitemaps are cut at
their per-host budget, so its pages get fetched instead of ever more sitemaps.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from webgather.runtime.engine.parse_pool import MAX_CHILD_SITEMAPS_PER_HOST

from node_crawl_helpers import verify_warcs

NS = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


class SitemapSite:
    """robots.txt -> /index.xml (2,000 sitemaps) -> /sN.xml (50,000 pages each) -> pages."""

    def __init__(self, address: str = "127.0.0.1") -> None:
        self.address, self.port = address, 0
        self.served: Counter[str] = Counter()
        self._urlset = b""

    def build(self) -> None:
        base = f"http://{self.address}:{self.port}".encode()
        self.index = b"<sitemapindex " + NS + b">" + b"".join(
            b"<sitemap><loc>%s/s%d.xml</loc></sitemap>" % (base, n) for n in range(2000)) + b"</sitemapindex>"
        self._urlset = b"<urlset " + NS + b">" + b"".join(
            b"<url><loc>%s/pNNNN-%d</loc></url>" % (base, n) for n in range(50_000)) + b"</urlset>"
        self.robots = b"User-agent: *\nAllow: /\nSitemap: " + base + b"/index.xml\n"

    def body(self, path: str) -> tuple[bytes, bytes]:
        if path == "/robots.txt":
            return self.robots, b"text/plain"
        if path == "/index.xml":
            return self.index, b"application/xml"
        if path.startswith("/s") and path.endswith(".xml"):
            return self._urlset.replace(b"NNNN", path[2:-4].encode()), b"application/xml"
        return b"<html><body>a page</body></html>", b"text/html"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                body, kind = self.body(path)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (kind, len(body)))
                writer.write(body)
                await writer.drain()
                self.served["sitemap" if path.endswith(".xml") else "other"] += 1
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def site() -> AsyncIterator[SitemapSite]:
    async for [site] in serving(["127.0.0.1"]):
        yield site


@pytest.fixture
async def sites() -> AsyncIterator[list[SitemapSite]]:
    """Eight hosts, each on its own loopback address (the per-IP cap does not serialize them)."""
    async for started in serving([f"127.0.0.{n}" for n in range(2, 10)]):
        yield started


async def serving(addresses: list[str]) -> AsyncIterator[list[SitemapSite]]:
    started, servers = [], []
    try:
        for address in addresses:
            site = SitemapSite(address)
            servers.append(await asyncio.start_server(site.serve, address, 0))
            site.port = servers[-1].sockets[0].getsockname()[1]
            site.build()
            started.append(site)
        yield started
    finally:
        for server in servers:
            server.close()
            await asyncio.wait_for(server.wait_closed(), 5.0)


async def start_crawl(seeds: list[str], out: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", "crawl", *seeds, "--out", str(out),
        "--delay", "0", "--no-progress", "--allow-address", "127.0.0.0/8", env=dict(os.environ),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )


async def stopped(crawl: asyncio.subprocess.Process) -> tuple[int, float]:
    """SIGTERM ``crawl``: its exit code and the seconds it took to exit (killed if still running after 60 s)."""
    started = time.monotonic()
    try:
        crawl.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(crawl.wait(), 60.0)
        return code, time.monotonic() - started
    finally:
        if crawl.returncode is None:
            crawl.kill()
            await crawl.wait()


async def test_a_huge_sitemap_index_is_cut_at_its_budget_and_sigterm_ends_the_crawl_within_5_s(
    site: SitemapSite, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    crawl = await start_crawl([f"http://127.0.0.1:{site.port}/"], out)
    deadline = time.monotonic() + 60.0
    while site.served["other"] < 50 and time.monotonic() < deadline:  # pages come after the budget's sitemaps
        await asyncio.sleep(0.1)
    code, stop_s = await stopped(crawl)
    assert code == 0
    assert stop_s < 5.0, f"SIGTERM took {stop_s:.1f} s"
    assert site.served["other"] >= 50, site.served  # robots.txt, the home page, then pages the sitemaps list
    assert site.served["sitemap"] <= MAX_CHILD_SITEMAPS_PER_HOST + 1
    kinds = Counter(json.loads(line)["kind"] for line in (out / "crawl.log.jsonl").read_text().splitlines())
    assert kinds["sitemap"] <= MAX_CHILD_SITEMAPS_PER_HOST + 1


async def test_sigterm_ends_a_crawl_of_many_hosts_huge_sitemaps_within_5_s_with_its_warcs_whole(
    sites: list[SitemapSite], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    crawl = await start_crawl([f"http://{s.address}:{s.port}/" for s in sites], out)
    deadline = time.monotonic() + 60.0
    while sum(s.served["sitemap"] for s in sites) < 3 * len(sites) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # each host's index and two of its sitemaps of 50,000 URLs: parsed and routed now
    assert crawl.returncode is None
    code, stop_s = await stopped(crawl)
    assert code == 0  # ExitCode.DONE: "SIGTERM stopped it gracefully (the same command resumes)"
    assert stop_s < 5.0, f"SIGTERM took {stop_s:.1f} s"
    assert verify_warcs(out) > 0
    kinds = Counter(json.loads(line)["kind"] for line in (out / "crawl.log.jsonl").read_text().splitlines())
    assert kinds["robots"] >= len(sites)
