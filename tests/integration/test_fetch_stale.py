"""A kept-alive connection the server closed as our request went out (issue 13, item 7).

RFC 9112 section 9.3.1: a client may retry an idempotent request once,
automatically, on a new connection, when the reused one failed before any
response. Never when a response byte arrived, never on a new connection.
Over both transports, against the raw loopback server of test_fetch_faults.
The aiohttp transport does not retry at all: aiohttp's own retry (which it
turns off) also re-sends on new connections and after part of a response
head, and aiohttp tells neither apart through its public API.
"""

from __future__ import annotations

import pytest

from test_fetch_faults import PAGE, ROUTES, RawServer, Route, Writer, backend, client, reset_now, server
from webgather.fetch.http import HttpClient

__all__ = ["backend", "client", "server"]  # fixtures used here by name


def stale_after_first(how: str) -> Route:
    """Answer the first request on a connection; take the next one on it and hang up
    unanswered (``close``: FIN, ``reset``: RST; ``partial``: after a piece of a head),
    as a server whose keep-alive timeout ran out just as the request arrived."""
    answered: set[object] = set()

    async def route(w: Writer) -> bool:
        peer = w.get_extra_info("peername")
        if peer not in answered:
            answered.add(peer)
            return await ROUTES["/ok"](w)
        if how == "reset":
            return await reset_now(w)
        if how == "partial":
            w.write(b"HTTP/1.1 200 OK\r\nContent-Le")
            await w.drain()
        w.close()
        return False

    return route


@pytest.mark.parametrize("how", ["close", "reset"])
async def test_a_stale_kept_alive_connection_is_retried_once_on_a_new_one(
    server: RawServer, client: HttpClient, how: str, backend: str
) -> None:
    if backend == "aiohttp":
        pytest.skip("the aiohttp transport reports the stale connection as a reset (see the module docstring)")
    server.routes["/stale"] = stale_after_first(how)
    first = await client.fetch(server.url("/stale"))
    assert (first.status, first.error) == (200, None)
    again = await client.fetch(server.url("/stale"))  # goes out on the kept-alive connection
    assert (again.status, again.error, again.body) == (200, None, PAGE)
    assert server.connections == 2 and [p for p, _ in server.requests] == ["/stale"] * 3
    assert server.requests[-1][1] == list(again.request_headers)  # the WARC request: the bytes answered


async def test_no_retry_once_a_response_byte_arrived(server: RawServer, client: HttpClient) -> None:
    server.routes["/stale"] = stale_after_first("partial")
    assert (await client.fetch(server.url("/stale"))).status == 200
    cut = await client.fetch(server.url("/stale"))
    assert cut.status is None and cut.error in ("reset", "protocol", "truncated")
    assert server.connections == 1 and len(server.requests) == 2


@pytest.mark.parametrize("path", ["/close", "/reset"])
async def test_no_retry_on_a_new_connection(server: RawServer, client: HttpClient, path: str) -> None:
    r = await client.fetch(server.url(path))
    assert (r.status, r.error) == (None, "reset")
    assert server.connections == 1 and len(server.requests) == 1
