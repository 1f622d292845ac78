"""Issue 13 items 2 and 3 over both transports: nested Content-Encodings and oversized response heads.

The loopback server and client of :mod:`test_fetch_faults` are reused; every
test runs over the native transport and aiohttp's (the ``backend`` fixture).
"""

from __future__ import annotations

import gzip
import time
import zlib

from test_fetch_faults import PAGE, RawServer, Route, Writer, backend, fixed, head, server  # noqa: F401

from webgather.fetch.http import HttpClient

FIELD_CAP = 100
"""webgather.fetch.FIELD_CAP (a literal here so that these tests load, and fail, on the code before the cap)."""


def nested_gzip(layers: int, zeros_bytes: int) -> bytes:
    """``layers`` gzip codings: stored (level 0) layers around zeros, the outermost compressed."""
    body = b"\0" * zeros_bytes
    for _ in range(layers - 1):
        body = gzip.compress(body, compresslevel=0, mtime=0)
    return gzip.compress(body, compresslevel=9, mtime=0)


NESTED_20 = nested_gzip(20, 4 * 1024 * 1024)
THREE = gzip.compress(zlib.compress(gzip.compress(PAGE)))


def one_write(raw: bytes) -> Route:
    async def route(w: Writer) -> bool:
        w.write(raw)  # one write of the whole response: on loopback, one read at the client
        await w.drain()
        return True

    return route


BIG_HEAD = head("200 OK", [(f"X-F{i}", "v" * 1020) for i in range(98)] + [("Content-Length", "2")]) + b"ok"
MANY_FIELDS = head("200 OK", [(f"X-F{i}", str(i)) for i in range(FIELD_CAP)] + [("Content-Length", "2")]) + b"ok"
ISSUE_FIELDS = head("200 OK", [("Set-Cookie", f"c{i}=1") for i in range(2001)] + [("Content-Length", "2")]) + b"ok"
EXACT_FIELDS = head("200 OK", [(f"X-F{i}", str(i)) for i in range(FIELD_CAP - 1)] + [("Content-Length", "2")]) + b"ok"

WIRE_ROUTES: dict[str, Route] = {
    "/nested20": fixed("200 OK", NESTED_20, [("Content-Encoding", ", ".join(["gzip"] * 20))]),
    "/nested20fields": fixed("200 OK", NESTED_20, [("Content-Encoding", "gzip")] * 20),
    "/three": fixed("200 OK", THREE, [("Content-Type", "text/html"), ("Content-Encoding", "gzip, deflate, gzip")]),
    "/twofields": fixed("200 OK", zlib.compress(gzip.compress(PAGE)), [("Content-Encoding", "gzip"), ("Content-Encoding", "deflate")]),
    "/bighead": one_write(BIG_HEAD),
    "/manyfields": one_write(MANY_FIELDS),
    "/issuefields": one_write(ISSUE_FIELDS),
    "/exactfields": one_write(EXACT_FIELDS),
}


def wire_client(backend: str) -> HttpClient:
    from test_fetch_faults import make_client

    return make_client(backend, total_timeout_s=5.0)


async def test_twenty_nested_codings_are_protocol_quickly(server: RawServer, backend: str) -> None:
    server.routes.update(WIRE_ROUTES)
    async with wire_client(backend) as client:
        for path in ("/nested20", "/nested20fields"):
            cpu, wall = time.process_time(), time.perf_counter()
            r = await client.fetch(server.url(path))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            assert (r.status, r.error, r.body) == (200, "protocol", b"")
            assert "20 content codings" in r.error_detail and r.raw_body == NESTED_20
            assert cpu < 2.0 and wall < 2.0  # measured ~0.01 s; before: the whole decode, minutes at 45 MB


async def test_three_codings_and_codings_in_several_fields_decode(server: RawServer, backend: str) -> None:
    server.routes.update(WIRE_ROUTES)
    async with wire_client(backend) as client:
        for path in ("/three", "/twofields"):
            r = await client.fetch(server.url(path))
            assert (r.status, r.error, r.body) == (200, None, PAGE)


async def test_a_100_kb_head_in_one_read_is_refused(server: RawServer, backend: str) -> None:
    assert len(BIG_HEAD) > 100_000
    server.routes.update(WIRE_ROUTES)
    async with wire_client(backend) as client:
        r = await client.fetch(server.url("/bighead"))
    assert (r.status, r.error, r.raw_body) == (None, "protocol", b"")
    assert "64 KiB" in r.error_detail


async def test_too_many_header_fields_are_refused(server: RawServer, backend: str) -> None:
    server.routes.update(WIRE_ROUTES)
    async with wire_client(backend) as client:
        for path in ("/manyfields", "/issuefields"):
            r = await client.fetch(server.url(path))
            assert (r.status, r.error, r.raw_body) == (None, "protocol", b""), path
        r = await client.fetch(server.url("/exactfields"))
    assert (r.status, r.error, r.body, len(r.response_headers)) == (200, None, b"ok", FIELD_CAP)
