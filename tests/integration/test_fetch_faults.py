"""HttpClient, over both transports, against a raw asyncio server on 127.0.0.1 that misbehaves on purpose.

Every FetchError kind the fetcher can produce is provoked here for real: reset
before headers, short Content-Length, broken chunking, garbage instead of HTTP,
a slow server past total_timeout_s, a refused port, a host that does not
resolve (stub lookup: nothing leaves the machine), bodies over max_body_bytes
and compression bombs over max_decoded_bytes.
"""

from __future__ import annotations

import asyncio
import gzip
import shutil
import socket
import ssl
import struct
import subprocess
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from webgather.config import FetchConfig
from webgather.errors import DnsFailed
from webgather.fetch.http import HttpClient
from webgather.fetch.model import FetchResult
from webgather.fetch.redirects import redirect_target
from webgather.fetch.resolver import Resolver
from webgather.fetch.retry import should_retry
from webgather.clock import SystemClock

from tests.integration.loopback_server import LoopbackServer

Writer = asyncio.StreamWriter
Route = Callable[[Writer], Awaitable[bool]]
"""Writes a response; returns True to keep the connection open for the next request."""

PAGE = b"<html><body><a href='/a'>a</a></body></html>"


def head(status: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def fixed(status: str, body: bytes, headers: list[tuple[str, str]] | None = None) -> Route:
    async def route(w: Writer) -> bool:
        w.write(head(status, (headers or []) + [("Content-Length", str(len(body)))]) + body)
        await w.drain()
        return True

    return route


@dataclass
class RawServer(LoopbackServer):
    """A loopback HTTP/1.1 server whose routes write raw bytes."""

    routes: dict[str, Route]
    requests: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)
    listen_on: str = "127.0.0.1"
    tls_context: ssl.SSLContext | None = None

    def __post_init__(self) -> None:
        super().__init__(self.listen_on, self.tls_context)

    async def handle(self, reader: asyncio.StreamReader, writer: Writer) -> None:
        while await self._one(reader, writer):
            pass

    async def _one(self, reader: asyncio.StreamReader, writer: Writer) -> bool:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1]
        headers = [tuple(x.split(": ", 1)) for x in lines[1:] if x]
        self.requests.append((path, headers))  # type: ignore[arg-type]
        return await self.routes[path](writer)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


async def close_now(w: Writer) -> bool:
    w.close()
    return False


async def reset_now(w: Writer) -> bool:
    sock = w.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    w.transport.abort()
    return False


async def short_body(w: Writer) -> bool:
    w.write(head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "1000")]) + b"x" * 100)
    await w.drain()
    w.close()
    return False


def bad_chunks(pause_s: float) -> Route:
    async def route(w: Writer) -> bool:
        w.write(head("200 OK", [("Transfer-Encoding", "chunked")]) + b"5\r\nhello\r\n")
        await w.drain()
        await asyncio.sleep(pause_s)  # 0: head and broken chunk reach the parser in one read
        w.write(b"zz\r\nxx\r\n0\r\n\r\n")
        await w.drain()
        w.close()
        return False

    return route


async def good_chunks(w: Writer) -> bool:
    w.write(head("200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]))
    for piece in (PAGE[:10], PAGE[10:]):
        w.write(b"%x\r\n%s\r\n" % (len(piece), piece))
    w.write(b"0\r\n\r\n")
    await w.drain()
    return True


async def garbage(w: Writer) -> bool:
    w.write(b"HELLO THERE\r\nthis is not http\r\n\r\n")
    await w.drain()
    w.close()
    return False


async def huge_header(w: Writer) -> bool:
    w.write(head("200 OK", [("X-Big", "a" * 20000), ("Content-Length", "2")]) + b"ok")
    await w.drain()
    return True


async def slow_body(w: Writer) -> bool:
    w.write(head("200 OK", [("Content-Length", "10")]) + b"12345")
    await w.drain()
    await asyncio.sleep(3)
    return False


async def slow_head(w: Writer) -> bool:
    await asyncio.sleep(3)
    return False


async def close_delimited(w: Writer) -> bool:
    w.write(head("200 OK", [("Content-Type", "text/html"), ("Connection", "close")]) + PAGE)
    await w.drain()
    w.close()
    return False


async def big_body(w: Writer) -> bool:
    size = 3 * 1024 * 1024
    w.write(head("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(size))]))
    for i in range(size // 65536):
        w.write(bytes([i % 251]) * 65536)
        await w.drain()
    return True


ZEROS_GZ = gzip.compress(b"\0" * (10 * 1024 * 1024))
_deflater = zlib.compressobj(wbits=-15)
RAW_DEFLATE = _deflater.compress(PAGE) + _deflater.flush()

ROUTES: dict[str, Route] = {
    "/ok": fixed("200 OK", PAGE, [("Content-Type", "text/html; charset=utf-8"), ("Set-Cookie", "a=1"), ("X-Z", "z"), ("Set-Cookie", "b=2")]),
    "/gzip": fixed("200 OK", gzip.compress(PAGE), [("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
    "/deflate": fixed("200 OK", zlib.compress(PAGE), [("Content-Type", "text/html"), ("Content-Encoding", "deflate")]),
    "/rawdeflate": fixed("200 OK", RAW_DEFLATE, [("Content-Type", "text/html"), ("Content-Encoding", "deflate")]),
    "/zstd": fixed("200 OK", b"\x28\xb5\x2f\xfd", [("Content-Encoding", "zstd")]),
    "/bomb": fixed("200 OK", ZEROS_GZ, [("Content-Type", "text/html"), ("Content-Encoding", "gzip")]),
    "/big": big_body,
    "/redirect": fixed("302 Found", b"", [("Location", "/ok?from=redirect")]),
    "/notmod": fixed("304 Not Modified", b"", [("ETag", '"v1"')]),
    "/busy": fixed("503 Service Unavailable", b"busy", [("Retry-After", "7")]),
    "/close": close_now,
    "/reset": reset_now,
    "/short": short_body,
    "/badchunk": bad_chunks(0.05),
    "/badchunk1": bad_chunks(0.0),
    "/chunked": good_chunks,
    "/garbage": garbage,
    "/badstatus": fixed("abc Weird", b"ok"),
    "/chunked/badstatus": fixed("abc Weird", b"ok"),
    "/hugeheader": huge_header,
    "/slowbody": slow_body,
    "/slowhead": slow_head,
    "/eof": close_delimited,
}


@pytest.fixture
async def server() -> AsyncIterator[RawServer]:
    async with RawServer(dict(ROUTES)) as srv:
        yield srv


async def no_dns(host: str) -> list[str]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@pytest.fixture(params=["native", "aiohttp"])
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs over both transports of HttpClient."""
    return str(request.param)


def make_client(backend: str, **limits: float) -> HttpClient:
    config = FetchConfig(connect_timeout_s=1.0, total_timeout_s=limits.pop("total_timeout_s", 1.0), http_client=backend, **limits)  # type: ignore[arg-type]
    clock = SystemClock()
    resolver = Resolver(clock, static={"h1.web.test": "127.0.0.1"}, lookup=no_dns)
    return HttpClient(config, resolver, clock)


@pytest.fixture
async def client(backend: str) -> AsyncIterator[HttpClient]:
    async with make_client(backend, max_body_bytes=1024 * 1024, max_decoded_bytes=1024 * 1024) as c:
        yield c


async def test_plain_page_records_request_and_response(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/ok"), headers={"If-None-Match": '"v1"'})
    assert (r.status, r.reason, r.http_version, r.error) == (200, "OK", "1.1", None)
    assert r.body == r.raw_body == PAGE
    assert r.content_type == "text/html"
    assert [k for k, _ in r.response_headers] == ["Content-Type", "Set-Cookie", "X-Z", "Set-Cookie", "Content-Length"]
    assert [v for k, v in r.response_headers if k == "Set-Cookie"] == ["a=1", "b=2"]
    sent = dict(r.request_headers)
    assert sent["If-None-Match"] == '"v1"' and sent["Accept-Encoding"].startswith("gzip, deflate")
    assert sent["User-Agent"] == FetchConfig().user_agent
    assert server.requests[-1][1] == list(r.request_headers)  # recorded exactly what went out, in order
    assert r.request_headers[0] == ("Host", f"127.0.0.1:{server.port}")
    assert r.peer_ip == "127.0.0.1" and r.elapsed_s > 0 and r.started_at > 1e9


async def test_overridden_headers_are_recorded_as_sent(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/ok"), headers={"user-agent": "probe/1", "X-A": "1", "Accept": "text/plain"})
    assert r.status == 200
    assert server.requests[-1][1] == list(r.request_headers)
    assert ("user-agent", "probe/1") in r.request_headers and len(r.request_headers) == 5


async def test_credentials_in_a_url_are_not_sent(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(f"http://user:secret@127.0.0.1:{server.port}/ok")
    assert r.status == 200 and r.url == f"http://127.0.0.1:{server.port}/ok"  # nor recorded
    assert "Authorization" not in dict(server.requests[-1][1])


async def test_non_ascii_url_is_canonicalized_before_sending(server: RawServer, client: HttpClient) -> None:
    server.routes["/caf%C3%A9"] = ROUTES["/ok"]
    r = await client.fetch(f"http://127.0.0.1:{server.port}/café")
    assert (r.status, r.url) == (200, f"http://127.0.0.1:{server.port}/caf%C3%A9")


async def test_fake_host_name_connects_to_mapped_address_and_keeps_host(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/ok", host="h1.web.test"))
    assert r.status == 200 and r.url == f"http://h1.web.test:{server.port}/ok"
    assert dict(server.requests[-1][1])["Host"] == f"h1.web.test:{server.port}"


async def test_keep_alive_reuses_the_connection(server: RawServer, client: HttpClient) -> None:
    for _ in range(3):
        assert (await client.fetch(server.url("/ok"))).status == 200
    assert server.connections == 1


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/rawdeflate"])
async def test_compressed_bodies_are_decoded_raw_kept(server: RawServer, client: HttpClient, path: str) -> None:
    r = await client.fetch(server.url(path))
    assert r.error is None and r.body == PAGE and r.raw_body != PAGE and len(r.raw_body) > 0


async def test_chunked_and_close_delimited_bodies(server: RawServer, client: HttpClient) -> None:
    for path in ("/chunked", "/eof"):
        r = await client.fetch(server.url(path))
        assert (r.status, r.error, r.body) == (200, None, PAGE)


async def test_compression_bomb_is_refused_raw_kept(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/bomb"))
    assert (r.status, r.error, r.body) == (200, "bomb", b"")
    assert r.raw_body == ZEROS_GZ and not r.truncated
    assert "max" in r.error_detail or "over" in r.error_detail


async def test_unknown_content_encoding_is_protocol(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/zstd"))
    assert (r.status, r.error, r.body) == (200, "protocol", b"")


async def test_too_large_body_keeps_prefix_and_is_not_decoded(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/big"))
    assert (r.status, r.error, r.truncated, r.body) == (200, "too_large", True, b"")
    assert len(r.raw_body) == 1024 * 1024
    assert r.raw_body[:65536] == b"\0" * 65536 and r.raw_body[-1:] == bytes([15])
    again = await client.fetch(server.url("/ok"))  # the cut connection is not reused
    assert again.status == 200 and server.connections == 2


async def test_redirect_is_a_result_not_followed(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/redirect"))
    assert (r.status, r.error) == (302, None)
    assert [p for p, _ in server.requests] == ["/redirect"]
    assert redirect_target(r) == server.url("/ok?from=redirect")


async def test_not_modified_and_busy(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/notmod"), headers={"If-None-Match": '"v1"'})
    assert (r.status, r.error, r.body) == (304, None, b"")
    busy = await client.fetch(server.url("/busy"))
    assert (busy.status, busy.body, busy.header("retry-after")) == (503, b"busy", "7")
    assert should_retry(busy, 0, 2)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/close", "reset"), ("/reset", "reset"), ("/garbage", "protocol"),
        ("/badstatus", "protocol"), ("/chunked/badstatus", "protocol"), ("/hugeheader", "protocol"),
    ],  # fmt: skip
)
async def test_failures_before_a_response(server: RawServer, client: HttpClient, path: str, kind: str) -> None:
    r = await client.fetch(server.url(path))
    assert (r.status, r.error, r.raw_body) == (None, kind, b"")
    assert r.error_detail and len(r.error_detail) <= 203


async def test_short_content_length_is_truncated_prefix_kept(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/short"))
    assert (r.status, r.error, r.body, r.raw_body) == (200, "truncated", b"", b"x" * 100)
    assert should_retry(r, 0, 1) and not should_retry(r, 1, 1)


async def test_broken_chunking_is_truncated(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/badchunk"))
    assert (r.status, r.error, r.body, r.raw_body) == (200, "truncated", b"", b"hello")
    r = await client.fetch(server.url("/badchunk1"))  # parser fails before it hands out the head
    assert (r.error, r.body) == ("truncated", b"")


@pytest.mark.parametrize("path", ["/slowhead", "/slowbody"])
async def test_slow_server_hits_total_timeout(server: RawServer, path: str, backend: str) -> None:
    async with make_client(backend, total_timeout_s=0.4) as c:
        r = await c.fetch(server.url(path))
    assert r.error == "timeout" and r.body == b""
    assert 0.35 < r.elapsed_s < 2.0
    if path == "/slowbody":
        assert r.status == 200 and r.raw_body == b"12345"


async def test_refused_port_is_connect(client: HttpClient) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    r = await client.fetch(f"http://127.0.0.1:{port}/")
    assert (r.status, r.error, r.peer_ip) == (None, "connect", "127.0.0.1")
    assert should_retry(r, 0, 2)


async def test_unresolvable_host_is_dns_without_leaving_the_machine(client: HttpClient) -> None:
    r = await client.fetch("http://nowhere.web.test/")
    assert (r.status, r.error, r.peer_ip) == (None, "dns", None)
    assert "not known" in r.error_detail
    assert not should_retry(r, 0, 2)


@pytest.mark.parametrize(
    "url", ["ftp://h1.web.test/", "not a url", "http://", "", "mailto:x@y.z", "http://[bad/", "http://a.test:99999/",
            "http://h1.web.test:0/", "http://u:p@h1.web.test:00/x"]
)
async def test_invalid_urls_are_invalid_url(client: HttpClient, url: str) -> None:
    r = await client.fetch(url)
    assert (r.status, r.error) == (None, "invalid_url")


async def test_malformed_request_header_is_refused_not_sent(server: RawServer, client: HttpClient) -> None:
    r = await client.fetch(server.url("/ok"), headers={"X-Bad": "a\r\nInjected: 1"})
    assert (r.status, r.error) == (None, "protocol") and server.requests == []


async def test_many_concurrent_fetches_share_the_limit(server: RawServer, backend: str) -> None:
    async with make_client(backend, concurrency=4) as c:  # type: ignore[arg-type]
        results = await asyncio.gather(*(c.fetch(server.url("/ok")) for _ in range(40)))
    assert all(r.status == 200 and r.body == PAGE for r in results)
    assert server.connections <= 4


async def test_closed_client_reports_instead_of_raising(server: RawServer, backend: str) -> None:
    c = make_client(backend)
    assert (await c.fetch(server.url("/ok"))).status == 200
    await c.close()
    r = await c.fetch(server.url("/ok"))
    assert (r.status, r.error) == (None, "connect")


async def test_dns_failure_inside_aiohttp_maps_to_dns() -> None:
    """If the cache entry expires between our lookup and aiohttp's, aiohttp's path maps too."""
    calls: list[str] = []

    async def first_only(host: str) -> list[str]:
        calls.append(host)
        if len(calls) > 1:
            raise DnsFailed("gone")
        return ["127.0.0.1"]

    clock = SystemClock()
    resolver = Resolver(clock, ttl_s=0.0, lookup=first_only)
    config = FetchConfig(connect_timeout_s=1.0, total_timeout_s=1.0, http_client="aiohttp")
    async with HttpClient(config, resolver, clock) as c:
        r: FetchResult = await c.fetch("http://flaky.web.test:9/")
    assert (r.error, len(calls)) == ("dns", 2)


async def test_real_dns_path_with_localhost_only(server: RawServer, backend: str) -> None:
    clock = SystemClock()
    resolver = Resolver(clock)  # the event loop's getaddrinfo: "localhost" never leaves the machine
    config = FetchConfig(connect_timeout_s=1.0, total_timeout_s=1.0, http_client=backend)  # type: ignore[arg-type]
    async with HttpClient(config, resolver, clock) as c:
        r = await c.fetch(f"http://localhost:{server.port}/ok")
    assert (r.status, r.peer_ip, resolver.lookups) == (200, "127.0.0.1", 1)
    assert dict(server.requests[-1][1])["Host"] == f"localhost:{server.port}"


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
async def test_ipv6_literal_and_mapped_name(backend: str) -> None:
    clock = SystemClock()
    resolver = Resolver(clock, static={"v6.web.test": "::1"}, lookup=no_dns)
    config = FetchConfig(connect_timeout_s=1.0, total_timeout_s=1.0, http_client=backend)  # type: ignore[arg-type]
    async with RawServer(dict(ROUTES), listen_on="::1") as srv, HttpClient(config, resolver, clock) as c:
        port = srv.port
        literal = await c.fetch(f"http://[::1]:{port}/ok")
        named = await c.fetch(f"http://v6.web.test:{port}/ok")
    assert (literal.status, literal.peer_ip, named.status, named.peer_ip) == (200, "::1", 200, "::1")
    assert dict(srv.requests[-1][1])["Host"] == f"v6.web.test:{port}"


async def continue_then_ok(w: Writer) -> bool:
    w.write(head("100 Continue", []) * 3 + head("103 Early Hints", [("Link", "</s.css>; rel=preload")]))
    return await ROUTES["/ok"](w)


async def extra_bytes(w: Writer) -> bool:
    w.write(head("200 OK", [("Content-Length", "2")]) + b"okEXTRA")
    await w.drain()
    return True


async def http10(w: Writer) -> bool:
    w.write(head("200 OK", [("Content-Length", "2")]).replace(b"HTTP/1.1", b"HTTP/1.0", 1) + b"ok")
    await w.drain()
    return True


async def answer_then_close(w: Writer) -> bool:
    await ROUTES["/ok"](w)
    w.close()  # as a server whose keep-alive timeout ran out would
    return False


async def test_informational_responses_are_skipped(server: RawServer, client: HttpClient) -> None:
    server.routes["/continue"] = continue_then_ok
    r = await client.fetch(server.url("/continue"))
    assert (r.status, r.error, r.body) == (200, None, PAGE)


@pytest.mark.parametrize("path", ["/extra", "/http10", "/closes"])
async def test_a_connection_is_reused_only_when_its_framing_allows(
    server: RawServer, client: HttpClient, path: str, backend: str
) -> None:
    if backend == "aiohttp" and path == "/extra":
        pytest.skip("aiohttp's parser rejects the whole response (protocol); ours keeps it, drops the connection")
    server.routes.update({"/extra": extra_bytes, "/http10": http10, "/closes": answer_then_close})
    first = await client.fetch(server.url(path))
    assert (first.status, first.error) == (200, None)
    await asyncio.sleep(0.05)  # the close reaches the client
    again = await client.fetch(server.url("/ok"))
    assert (again.status, again.error, again.body) == (200, None, PAGE)
    assert server.connections == 2


async def test_idle_connections_of_many_hosts_stay_within_their_cap(server: RawServer, backend: str) -> None:
    if backend == "aiohttp":
        pytest.skip("aiohttp keeps idle connections of every host until its keep-alive timeout")
    config = FetchConfig(connect_timeout_s=1.0, total_timeout_s=1.0, max_idle_connections=2, http_client=backend)  # type: ignore[arg-type]
    clock = SystemClock()
    names = [f"h{i}.web.test" for i in range(6)]
    resolver = Resolver(clock, static=dict.fromkeys(names, "127.0.0.1"), lookup=no_dns)
    async with HttpClient(config, resolver, clock) as c:
        for name in names * 2:
            assert (await c.fetch(server.url("/ok", host=name))).status == 200
            await asyncio.sleep(0.01)
            assert sum(1 for task in server._tasks if not task.done()) <= 2
        for name in names[-2:]:  # the two kept are the two most recent
            assert (await c.fetch(server.url("/ok", host=name))).status == 200
    assert server.connections == 12


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a certificate with")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=h1.web.test",
         "-addext", "subjectAltName=DNS:h1.web.test", "-keyout", key, "-out", cert],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.mark.parametrize("verify", [False, True])
async def test_https_with_sni_and_certificate_checks(self_signed: tuple[str, str], backend: str, verify: bool) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed)
    names: list[str | None] = []
    context.sni_callback = lambda _sock, name, _ctx: names.append(name)  # type: ignore[assignment,func-returns-value]
    config = FetchConfig(connect_timeout_s=2.0, total_timeout_s=2.0, http_client=backend)  # type: ignore[arg-type]
    clock = SystemClock()
    resolver = Resolver(clock, static={"h1.web.test": "127.0.0.1"}, lookup=no_dns)
    async with RawServer(dict(ROUTES), tls_context=context) as srv, \
            HttpClient(config, resolver, clock, verify_tls=verify) as c:  # fmt: skip
        r = await c.fetch(f"https://h1.web.test:{srv.port}/ok")
    assert names and names[0] == "h1.web.test"
    if verify:  # self-signed: the check fails, as a connect error
        assert (r.status, r.error) == (None, "connect") and "certificate" in r.error_detail.lower()
    else:
        assert (r.status, r.error, r.body) == (200, None, PAGE)


async def trickle(w: Writer) -> bool:
    body = b"".join(b"%x;x=1\r\n%s\r\n" % (len(p), p) for p in (PAGE[:7], PAGE[7:])) + b"0\r\nX-T: 1\r\n\r\n"
    raw = head("200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]) + body
    for at in range(0, len(raw), 3):  # three bytes a write: every boundary falls mid-line somewhere
        w.write(raw[at : at + 3])
        await w.drain()
        await asyncio.sleep(0)
    return True


async def test_a_response_trickling_in_small_pieces_is_read_whole(server: RawServer, client: HttpClient) -> None:
    server.routes["/trickle"] = trickle
    for _ in range(2):  # and the connection is reused after it
        r = await client.fetch(server.url("/trickle"))
        assert (r.status, r.error, r.body) == (200, None, PAGE)
    assert server.connections == 1
