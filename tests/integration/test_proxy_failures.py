"""Through a loopback proxy: https by CONNECT (TLS with the origin), NO_PROXY, wrong credentials
(407: ``proxy_auth``), a proxy that is not there (``proxy_unreachable``), a refused tunnel.

Origins listen on 127.0.0.2 (the only allowed address); the proxy on 127.0.0.1.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from webgather.clock import SystemClock
from webgather.config import CrawlConfig, FetchConfig, PolitenessConfig, RobotsConfig
from webgather.fetch.guard import AddressGuard
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver
from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log

from forward_proxy import ForwardProxy, closed_port
from test_address_guard import TinyServer
from tls_origin import TlsOrigin

GOOD, BAD = ("crawler", "right-pw"), ("crawler", "wrong-pw")
NAMES = {"secure.test": "127.0.0.2", "via.test": "127.0.0.2", "direct.test": "127.0.0.2"}
PAGES = {"/": '<a href="/a">a</a><a href="/b">b</a>', "/a": '<a href="/b">b</a>', "/b": "end"}


def _client(transport: str, env: dict[str, str] | None = None, verify_tls: bool = True, **fetch: object) -> HttpClient:
    config = FetchConfig(http_client=transport, allow_addresses=("127.0.0.2/32",),  # type: ignore[arg-type]
                         connect_timeout_s=2.0, total_timeout_s=4.0, max_retries=0, **fetch)  # type: ignore[arg-type]
    resolver = Resolver(SystemClock(), static=NAMES, guard=AddressGuard.from_config(config))
    return HttpClient(config, resolver, SystemClock(), verify_tls=verify_tls, env=env or {})


def _crawl_config(tmp_path: Path, proxy: str, transport: str = "native", *, obey: bool = True) -> CrawlConfig:
    resolve = tmp_path / "resolve.txt"
    resolve.write_text("".join(f"{name} {address}\n" for name, address in NAMES.items()))
    return CrawlConfig(
        out_dir=str(tmp_path / "out"), progress=False, pin_cpu="off",
        politeness=PolitenessConfig(min_delay_s=0.0, backoff_base_s=0.01, backoff_max_s=0.05),
        robots=RobotsConfig(obey=obey, error_retry_s=0.01, retry_factor=1.0, max_tries=2),
        fetch=FetchConfig(resolve_file=str(resolve), allow_addresses=("127.0.0.2/32",), proxy=proxy,
                          http_client=transport, connect_timeout_s=2.0, total_timeout_s=4.0),  # type: ignore[arg-type]
    )


async def test_a_crawl_of_https_pages_through_connect_verifies_the_origin(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    async with TlsOrigin(tmp_path, "secure.test", "127.0.0.2", PAGES) as origin, \
            ForwardProxy(NAMES, GOOD) as proxy:
        monkeypatch.setenv("SSL_CERT_FILE", str(origin.cert_path))  # trust exactly the origin's certificate
        summary = await run_crawl(_crawl_config(tmp_path, proxy.url(GOOD)), [origin.url()])
    assert summary["finished"] is True
    entries = [e for e in read_crawl_log(tmp_path / "out" / "crawl.log.jsonl") if not e.get("retry")]
    assert {e["url"]: e["status"] for e in entries} == {
        origin.url("/robots.txt"): 404, origin.url("/"): 200, origin.url("/a"): 200, origin.url("/b"): 200}
    assert {(r.method, r.target) for r in proxy.requests} == {("CONNECT", f"secure.test:{origin.port}")}
    assert all(r.headers["proxy-authorization"].startswith("Basic ") for r in proxy.requests)
    assert len(origin.heads) == 4  # TLS ended at the origin: it read every request itself
    for head in origin.heads:
        assert head.startswith(b"GET /") and f"Host: secure.test:{origin.port}".encode() in head
        assert b"proxy-authorization" not in head.lower()


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_https_through_connect_and_its_failures(transport: str, tmp_path: Path) -> None:
    async with TlsOrigin(tmp_path, "secure.test", "127.0.0.2", PAGES) as origin, \
            ForwardProxy(NAMES, GOOD) as proxy:
        for creds, status, error in ((GOOD, 200, None), (BAD, None, "proxy_auth"), (None, None, "proxy_auth")):
            async with _client(transport, verify_tls=False, proxy=proxy.url(creds)) as client:
                result = await client.fetch(origin.url("/a"))
            assert (result.status, result.error) == (status, error), result.error_detail
            assert result.peer_ip == "127.0.0.2"  # the origin's address, not the proxy's
        assert result.response_headers == () and result.raw_body == b""  # the 407 is not the origin's answer
        async with _client(transport, verify_tls=False, proxy=proxy.url(GOOD)) as client:
            unknown = await client.fetch(f"https://unknown.example.com:{origin.port}/")
    assert len(origin.heads) == 1
    # unknown.example.com has no address for us either: "dns", before the proxy is asked
    assert unknown.error == "dns"
    assert [r.method for r in proxy.requests] == ["CONNECT"] * 3


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_a_refused_tunnel_is_proxy_refused(transport: str, tmp_path: Path) -> None:
    async with ForwardProxy({}, GOOD) as proxy:  # it knows no host: 502 to every CONNECT
        async with _client(transport, verify_tls=False, proxy=proxy.url(GOOD)) as client:
            result = await client.fetch("https://secure.test:4443/")
    assert (result.status, result.error) == (None, "proxy_refused") and "502" in result.error_detail


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_no_proxy_is_honoured(transport: str) -> None:
    async with TinyServer("127.0.0.2", {"/": (200, "", "hello")}) as origin, ForwardProxy(NAMES) as proxy:
        env = {"http_proxy": proxy.url(), "NO_PROXY": "localhost,direct.test"}
        async with _client(transport, env) as client:
            via = await client.fetch(f"http://via.test:{origin.port}/")
            direct = await client.fetch(f"http://direct.test:{origin.port}/")
    assert (via.status, direct.status) == (200, 200)
    assert [r.target for r in proxy.requests] == [f"http://via.test:{origin.port}/"]
    assert origin.connections == 2


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_wrong_credentials_are_a_recorded_failure_not_a_hang(transport: str, tmp_path: Path) -> None:
    async with TinyServer("127.0.0.2", {"/": (200, "", "hello")}) as origin, ForwardProxy(NAMES, GOOD) as proxy:
        started = time.monotonic()
        summary = await run_crawl(_crawl_config(tmp_path, proxy.url(BAD), transport, obey=False),
                                  [f"http://via.test:{origin.port}/"])
        took_s = time.monotonic() - started
    assert summary["finished"] is True and took_s < 10
    entries = list(read_crawl_log(tmp_path / "out" / "crawl.log.jsonl"))
    assert [(e["status"], e["error"], e.get("retry", False)) for e in entries] == [(None, "proxy_auth", False)]
    assert "407" in entries[0]["detail"] and BAD[1] not in entries[0]["detail"]
    assert origin.connections == 0 and len(proxy.requests) == 1
    assert not _warc_has(tmp_path / "out", b"407")  # the proxy's answer is not archived as the origin's


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_an_unreachable_proxy_is_a_recorded_error(transport: str, tmp_path: Path) -> None:
    with closed_port() as port:
        started = time.monotonic()
        summary = await run_crawl(_crawl_config(tmp_path, f"http://127.0.0.1:{port}", transport, obey=False),
                                  ["http://via.test:8080/"])
        took_s = time.monotonic() - started
    assert summary["finished"] is True and took_s < 10
    entries = list(read_crawl_log(tmp_path / "out" / "crawl.log.jsonl"))
    assert {e["error"] for e in entries} == {"proxy_unreachable"}
    assert [e.get("retry", False) for e in entries] == [True, True, False]  # transient, like connect
    assert f"127.0.0.1:{port}" in entries[-1]["detail"]


def _warc_has(out: Path, needle: bytes) -> bool:
    import gzip

    return any(needle in gzip.decompress(p.read_bytes()) for p in out.rglob("*.warc.gz"))


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_the_guard_still_judges_the_origin_behind_the_proxy(transport: str) -> None:
    """The proxy (127.0.0.1) is exempt as the proxy, not as an origin: a link to its address, or a name
    that resolves to it, is refused before the proxy is asked (a proxy would fetch its own loopback)."""
    async with TinyServer("127.0.0.1", {"/": (200, "", "secret")}) as inside, ForwardProxy(NAMES) as proxy:
        async with _client(transport, proxy=proxy.url()) as client:
            for url in (f"http://127.0.0.1:{inside.port}/", f"http://127.0.0.1:{proxy.port}/",
                        f"https://127.0.0.1:{inside.port}/"):
                result = await client.fetch(url)
                assert (result.status, result.error) == (None, "forbidden_address"), url
    assert proxy.requests == [] and inside.connections == 0


def test_the_tunnel_works_on_uvloop_too(tmp_path: Path) -> None:
    """The crawler runs on uvloop (the tests on asyncio's loop): start_tls over the CONNECT tunnel there."""
    import uvloop

    async def fetch_twice() -> list[tuple[int | None, bytes]]:
        async with TlsOrigin(tmp_path, "secure.test", "127.0.0.2", PAGES) as origin, \
                ForwardProxy(NAMES, GOOD) as proxy:
            async with _client("native", verify_tls=False, proxy=proxy.url(GOOD)) as client:
                return [((r := await client.fetch(origin.url("/b"))).status, r.body) for _ in range(2)]

    assert uvloop.run(fetch_twice()) == [(200, b"end"), (200, b"end")]
