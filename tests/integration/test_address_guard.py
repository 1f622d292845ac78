"""The destination guard end to end: both transports, IP-literal spellings, redirects and names, in a crawl.

Two tiny servers on loopback: an allowed one on 127.0.0.2 (``allow_addresses``) whose pages point
at a forbidden one on 127.0.0.1 in every spelling; the forbidden one must never see a connection.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from webgather.config import CrawlConfig, FetchConfig, PolitenessConfig, RobotsConfig, ScopeConfig
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver
from webgather.clock import SystemClock
from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log
from webgather.urls import canonicalize

from tests.integration.loopback_server import LoopbackServer


class TinyServer(LoopbackServer):
    """HTTP/1.1 on one loopback address: ``path -> (status, extra head lines, body)``; counts connections."""

    def __init__(self, host: str, pages: dict[str, tuple[int, str, str]]) -> None:
        super().__init__(host)
        self.pages = pages

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
        except (OSError, TimeoutError):
            return
        path = head.split(b" ", 2)[1].decode()
        status, extra, body = self.pages.get(path, (404, "", "not here"))
        data = body.encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: text/html\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: close\r\n{extra}\r\n".encode() + data)
        await writer.drain()


@pytest.fixture
async def forbidden() -> AsyncIterator[TinyServer]:
    async with TinyServer("127.0.0.1", {"/": (200, "", "secret")}) as server:
        yield server


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_both_transports_refuse_before_connecting(transport: str, forbidden: TinyServer) -> None:
    for allow, expected in (((), "forbidden_address"), (("127.0.0.1/32",), None)):
        config = FetchConfig(http_client=transport, allow_addresses=allow)  # type: ignore[arg-type]
        async with HttpClient(config, Resolver.from_config(config, SystemClock()), SystemClock()) as client:
            for spelling in ("127.0.0.1", "0x7f000001", "2130706433", "127.1"):
                url = canonicalize(f"http://{spelling}:{forbidden.port}/")  # the frontier's URLs are canonical
                assert url == f"http://127.0.0.1:{forbidden.port}/"
                result = await client.fetch(url)
                assert result.error == expected, (spelling, result.error)
                assert (result.status == 200) is (expected is None)
    assert forbidden.connections == 4  # the allowed rounds only


async def test_a_crawl_never_reaches_a_private_address(forbidden: TinyServer, tmp_path: Path) -> None:
    port = forbidden.port
    targets = [f"http://127.0.0.1:{port}/a", f"http://0x7f000001:{port}/b", f"http://2130706433:{port}/c",
               f"http://127.1:{port}/d", f"http://[::1]:{port}/e", f"http://localhost:{port}/f",
               f"http://internal.example.com:{port}/g"]
    links = "".join(f'<a href="{t}">x</a>' for t in targets)
    pages = {"/": (200, "", f'<html><body>{links}<a href="/hop">hop</a></body></html>'),
             "/hop": (302, f"Location: http://127.0.0.1:{port}/redirected\r\n", "")}
    resolve = tmp_path / "resolve.txt"
    # no real DNS; a name with a private answer points at the forbidden server too, so that even a
    # broken guard could only ever reach loopback (unit tests cover 10/8, 169.254/16 and the rest)
    resolve.write_text("localhost 127.0.0.1\ninternal.example.com 127.0.0.1\n")
    async with TinyServer("127.0.0.2", pages) as allowed:
        config = CrawlConfig(
            out_dir=str(tmp_path / "out"), progress=False, pin_cpu="off",
            politeness=PolitenessConfig(min_delay_s=0.0), robots=RobotsConfig(error_retry_s=0.05),
            scope=ScopeConfig(mode="any"),
            fetch=FetchConfig(resolve_file=str(resolve), allow_addresses=("127.0.0.2/32",), connect_timeout_s=2.0),
        )
        summary = await run_crawl(config, [f"http://127.0.0.2:{allowed.port}/"])
    assert summary["finished"] is True
    assert forbidden.connections == 0
    entries = [e for e in read_crawl_log(tmp_path / "out" / "crawl.log.jsonl") if not e.get("retry")]
    refused = {e["url"] for e in entries if e["error"] == "forbidden_address"}
    assert {u.rpartition("/")[2] for u in refused} == {"a", "b", "c", "d", "e", "f", "g", "redirected", "robots.txt"}
    assert {u.partition("//")[2].partition("/")[0] for u in refused} == {  # the parser's one spelling each
        f"127.0.0.1:{port}", f"[::1]:{port}", f"localhost:{port}", f"internal.example.com:{port}"}
    assert any(e["url"].endswith("/hop") and e["status"] == 302 for e in entries)


def test_testweb_config_allows_its_own_loopback_web() -> None:
    from webgather.testweb.params import WebParams, crawl_config_for

    fetch = crawl_config_for(WebParams.for_tests()).fetch
    assert fetch.deny_private_addresses and fetch.allow_addresses == ("127.0.0.0/8",)
    assert dataclasses.replace(fetch, allow_addresses=()).allow_addresses == ()


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_a_rebinding_name_cannot_slip_past_between_check_and_connect(transport: str,
                                                                          forbidden: TinyServer) -> None:
    """A name whose answer turns private between two lookups (DNS rebinding, TTL 0): aiohttp resolves
    again inside its connector, and that second answer passes the guard too."""
    answers = iter(["127.0.0.2", "127.0.0.1", "127.0.0.1"])

    async def lookup(name: str) -> list[str]:
        return [next(answers)]

    config = FetchConfig(http_client=transport,  # type: ignore[arg-type]
                         allow_addresses=("127.0.0.2/32",), dns_ttl_s=0.0, connect_timeout_s=2.0)
    resolver = Resolver.from_config(config, SystemClock(), lookup=lookup)
    async with HttpClient(config, resolver, SystemClock()) as client:
        result = await client.fetch(f"http://rebind.example.com:{forbidden.port}/")
    if transport == "native":  # one lookup, and the connection goes to that checked answer
        assert result.peer_ip == "127.0.0.2" and result.error != "forbidden_address"
    else:
        assert result.error == "forbidden_address", result
    assert forbidden.connections == 0
