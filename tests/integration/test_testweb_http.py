"""The synthetic web over HTTP: a brute-force crawl agrees exactly with the closure.

The reference crawler below is deliberately small and independent of
webgather's own fetcher, parser and robots code: aiohttp for HTTP,
``webgather.urls`` for URL resolution, protego for robots.txt, selectolax
for links. It is sequential and follows docs/contracts.md ("What a crawl
does with each URL"). Servers bind 127.0.x.y only and close at the end.
"""

from __future__ import annotations

import asyncio
import html
import re
import socket
import zlib
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from protego import Protego
from selectolax.lexbor import LexborHTMLParser

from webgather.config import CrawlConfig, FetchConfig, ScopeConfig
from webgather.scope import Scope
from webgather.testweb import TestWebServer, WebModel, WebParams, crawl_config_for, crawl_outcomes
from webgather.testweb.records import max_in_flight
from webgather.urls import canonicalize, host_key, resolve_link

REDIRECTS = {301, 302, 303, 307, 308}
LOC = re.compile(rb"<loc>(.*?)</loc>", re.S)


class ModelResolver(AbstractResolver):
    """Resolves the web's host names from its resolve lines; nothing else."""

    def __init__(self, model: WebModel) -> None:
        self.table = dict(line.split() for line in model.resolve_lines())

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        address = self.table[host]
        return [ResolveResult(hostname=host, host=address, port=port, family=socket.AF_INET, proto=0, flags=0)]

    async def close(self) -> None:
        return None


@dataclass
class Fetched:
    status: int | None
    error: str | None
    headers: Any = None
    body: bytes = b""


def extract_links(url: str, body: bytes) -> list[str]:
    tree = LexborHTMLParser(body.decode("utf-8", "replace"))
    for meta in tree.css("meta[name]"):
        if (meta.attributes.get("name") or "").lower() == "robots" and "nofollow" in (meta.attributes.get("content") or "").lower():
            return []
    base = url
    base_node = tree.css_first("base[href]")
    if base_node is not None:
        base = resolve_link(url, base_node.attributes.get("href") or "") or url
    links = []
    for node in tree.css("a[href], area[href], link[href], iframe[src], frame[src]"):
        if "nofollow" in (node.attributes.get("rel") or "").lower().split():
            continue
        value = node.attributes.get("src" if node.tag in ("iframe", "frame") else "href") or ""
        target = resolve_link(base, value)
        if target is not None:
            links.append(target)
    return links


class ReferenceCrawler:
    def __init__(self, session: aiohttp.ClientSession, config: CrawlConfig, seeds: list[str]) -> None:
        self.session, self.config = session, config
        self.scope = Scope(config.scope, seeds)
        self.queue: deque[tuple[str, int, int, str]] = deque()
        self.seen: set[str] = set()
        self.log: dict[str, tuple[int | None, str | None]] = {}
        self.robots: dict[str, Protego | str] = {}
        for seed in seeds:
            self.offer(seed, 0, 0, "page")

    def offer(self, url: str, depth: int, redirects: int, kind: str) -> None:
        if url not in self.seen and self.scope.reject(url, depth) is None:
            self.seen.add(url)
            self.queue.append((url, depth, redirects, kind))

    async def get(self, url: str) -> Fetched:
        fetch = self.config.fetch
        try:
            async with self.session.get(url, allow_redirects=False) as response:
                raw = b""
                while len(raw) <= fetch.max_body_bytes:
                    chunk = await response.content.read(64 * 1024)
                    if not chunk:
                        break
                    raw += chunk
                if len(raw) > fetch.max_body_bytes:
                    return Fetched(response.status, "too_large", response.headers)
                body = raw
                if response.headers.get("Content-Encoding") == "gzip":
                    inflater = zlib.decompressobj(31)
                    body = inflater.decompress(raw, fetch.max_decoded_bytes + 1)
                    if len(body) > fetch.max_decoded_bytes:
                        return Fetched(response.status, "bomb", response.headers)
                return Fetched(response.status, None, response.headers, body)
        except aiohttp.ClientPayloadError:
            return Fetched(200, "truncated")
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            return Fetched(None, "reset")
        except asyncio.TimeoutError:
            return Fetched(None, "timeout")

    async def get_with_retries(self, url: str) -> Fetched:
        for attempt in range(self.config.fetch.max_retries + 1):
            got = await self.get(url)
            transient = got.error in ("reset", "truncated", "timeout") or (
                got.error is None and got.status is not None and (got.status >= 500 or got.status == 429)
            )
            if not transient:
                return got
            if attempt < self.config.fetch.max_retries and got.headers is not None:
                await asyncio.sleep(min(1.0, float(got.headers.get("Retry-After", "0"))))
        return got

    async def rules(self, key: str) -> Protego | str:
        if key in self.robots:
            return self.robots[key]
        url, rules, failures = f"http://{key}/robots.txt", None, 0
        for _ in range(6 + 3):
            got = await self.get(url)
            if got.status in REDIRECTS:
                url = resolve_link(url, got.headers["Location"]) or url
                continue
            if got.status is None or got.status >= 500 or got.status == 429:
                failures += 1
                if failures < 3:
                    await asyncio.sleep(self.config.robots.error_retry_s)
                    continue
                self.robots[key] = "unavailable"
                return "unavailable"
            if got.status is not None and 200 <= got.status < 300:
                rules = Protego.parse(got.body.decode("utf-8", "replace").lstrip("\ufeff"))
                for sitemap in rules.sitemaps:
                    self.offer(canonicalize(sitemap) or sitemap, 0, 0, "sitemap")
            break
        self.robots[key] = rules or Protego.parse("")
        return self.robots[key]

    async def run(self) -> dict[str, tuple[int | None, str | None]]:
        while self.queue:
            url, depth, redirects, kind = self.queue.popleft()
            rules = await self.rules(host_key(url))
            if rules == "unavailable" or (isinstance(rules, Protego) and not rules.can_fetch(url, self.config.fetch.user_agent)):
                self.log[url] = (None, "robots_unavailable" if rules == "unavailable" else "robots")
                continue
            got = await self.get_with_retries(url)
            self.log[url] = (got.status, got.error)
            if got.error is None and got.status in REDIRECTS:
                target = resolve_link(url, got.headers["Location"])
                if target == url or redirects + 1 > self.config.fetch.max_redirects:
                    self.log[url] = (got.status, "redirect_loop")
                elif target is not None:
                    self.offer(target, depth, redirects + 1, kind)
            elif got.error is None and got.status is not None and 200 <= got.status < 300:
                for link in self.parse(url, kind, got):
                    self.offer(link, depth + 1, 0, "page")
        return self.log

    def parse(self, url: str, kind: str, got: Fetched) -> list[str]:
        if kind == "sitemap":
            return [canonicalize(html.unescape(m.decode().strip())) or "" for m in LOC.findall(got.body)]
        media = (got.headers.get("Content-Type") or "").partition(";")[0].strip().lower()
        return extract_links(url, got.body) if media in self.config.fetch.parse_content_types else []


async def reference_crawl(model: WebModel, srv: TestWebServer, config: CrawlConfig, seeds: list[str]) -> dict[str, tuple[int | None, str | None]]:
    timeout = aiohttp.ClientTimeout(total=config.fetch.total_timeout_s)
    connector = aiohttp.TCPConnector(resolver=ModelResolver(model), limit=4)
    headers = {"User-Agent": config.fetch.user_agent, "Accept-Encoding": "gzip"}
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers, auto_decompress=False) as session:
        return await ReferenceCrawler(session, config, seeds).run()


def fetched_set(log: dict[str, tuple[int | None, str | None]]) -> set[str]:
    return {url for url, (_, error) in log.items() if error not in ("robots", "robots_unavailable", "off_scope")}


async def test_closure_equals_a_brute_force_crawl_over_http() -> None:
    model = WebModel(WebParams.for_tests(seed=7))
    async with TestWebServer(model) as srv:
        seeds = [srv.home_url(0)]
        config = crawl_config_for(model.params, tuple(seeds))
        log = await reference_crawl(model, srv, config, seeds)
        expected = crawl_outcomes(model, seeds, config, now_s=srv.clock.wall())
        assert fetched_set(log) == set(expected.fetched)
        assert len(expected.fetched) > 100
        for url, outcome in expected.outcomes.items():
            assert log[url] == (outcome.status, outcome.error), url
        faults = {o.fault for o in expected.outcomes.values()}
        assert {"flaky", "long_chain", "loop", "truncated", "bomb", "oversized", "very_slow", "calendar"} <= faults
        in_flight = max_in_flight(srv.records, key=lambda r: r.local)
        assert max(in_flight.values()) <= 4


async def test_closure_follows_the_config_limits_too() -> None:
    model = WebModel(WebParams.for_tests(seed=7))
    async with TestWebServer(model) as srv:
        seeds = [srv.home_url(0)]
        base = crawl_config_for(model.params, tuple(seeds))
        config = replace(
            base,
            fetch=replace(base.fetch, max_retries=0, max_redirects=2),
            scope=ScopeConfig(mode="seed-hosts", max_url_length=200, max_repeated_segments=1),
        )
        log = await reference_crawl(model, srv, config, seeds)
        expected = crawl_outcomes(model, seeds, config)
        assert fetched_set(log) == set(expected.fetched)
        assert {host_key(u) for u in expected.fetched} == {host_key(seeds[0])}
        flaky = [o for o in expected.outcomes.values() if o.fault == "flaky"]
        assert flaky and all(o.attempts == 1 and o.links == () for o in flaky)
        wider = crawl_outcomes(model, seeds, replace(config, fetch=FetchConfig(max_retries=2, max_redirects=2)))
        assert len(wider.fetched) > len(expected.fetched)


async def test_conditional_requests_unknown_hosts_and_head() -> None:
    model = WebModel(WebParams.for_tests(seed=3))
    async with TestWebServer(model) as srv:
        connector = aiohttp.TCPConnector(resolver=ModelResolver(model))
        async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
            url = srv.home_url(1)
            async with session.get(url) as first:
                etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
                body = await first.read()
            async with session.get(url, headers={"If-None-Match": etag}) as again:
                assert again.status == 304 and await again.read() == b""
            async with session.get(url, headers={"If-Modified-Since": modified}) as again:
                assert again.status == 304
            async with session.get(url, headers={"If-None-Match": '"other"'}) as changed:
                assert changed.status == 200 and await changed.read() == body
            async with session.head(url) as head:
                assert head.status == 200 and int(head.headers["Content-Length"]) == len(body)
            address = model.address(model.host_names[0])
            async with session.get(f"http://{address}:{srv.port}/", headers={"Host": "nowhere.test"}) as misdirected:
                assert misdirected.status == 421
    assert srv.records and all(r.local.startswith("127.0.") for r in srv.records)


def test_cli_serve_prints_where_it_listens_and_stops_on_sigterm(tmp_path: Any) -> None:
    import signal
    import subprocess
    import sys

    command = [sys.executable, "-m", "webgather.testweb", "serve", "--hosts", "3", "--pages-per-host", "5",
               "--preset", "test", "--out", str(tmp_path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(4)]
        port = int(lines[1].rsplit(" ", 1)[1])
        resolve = (tmp_path / "resolve.txt").read_text().split()
        assert lines[3].startswith("seed: http://h0001.web.test:") and resolve[0] == "h0001.web.test"
        with socket.create_connection((resolve[1], port), timeout=5) as conn:
            conn.sendall(f"GET /robots.txt HTTP/1.1\r\nHost: h0001.web.test:{port}\r\nConnection: close\r\n\r\n".encode())
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 200 OK") and b"User-agent: *" in reply
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
