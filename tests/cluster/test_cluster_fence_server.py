"""The fence's ask to the server (``runtime.member.fence.ServerCheck``), pure: one ask serves every request
waiting when it is sent, its verdicts, and a node whose clock stopped sending nothing once Redis says its
lease is gone. The same with real processes and a slowed clock: ``test_cluster_slow_clock``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from webgather.clock import FakeClock
from webgather.errors import BackendUnavailable, Fenced
from webgather.runtime.member.fence import HELD, LAPSED, NEWER_TABLE, STALE, FencedHttp, Lease, ServerCheck


class _Server:
    """A fake ``lease_check``: what Redis would answer, and the asks made."""

    def __init__(self) -> None:
        self.ttl_ms, self.version, self.asks, self.fail = 3000, 1, 0, False
        self.gate: asyncio.Event | None = None

    async def probe(self) -> tuple[int, int | None]:
        self.asks += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise BackendUnavailable("cannot reach Redis")
        return self.ttl_ms, self.version


async def test_one_ask_serves_every_request_waiting_when_it_is_sent_and_verdicts() -> None:
    server, adopted = _Server(), [1]
    clock = FakeClock()
    check = ServerCheck(server.probe, lambda: adopted[0], 0.25, clock.monotonic, 0.35)
    assert await asyncio.gather(*(check.confirm() for _ in range(10))) == [HELD] * 10
    assert server.asks == 1
    server.gate = asyncio.Event()
    first = asyncio.ensure_future(check.confirm())
    while server.asks == 1:  # until the ask is on the wire
        await asyncio.sleep(0)
    later = asyncio.ensure_future(check.confirm())  # came after it was sent: needs an ask of its own
    await asyncio.sleep(0)
    server.gate.set()
    assert await first == HELD and await later == HELD and server.asks == 3
    server.gate = None
    for ttl_ms, version, verdict in ((200, 1, LAPSED), (-2, 1, LAPSED), (3000, None, LAPSED),
                                     (3000, 2, NEWER_TABLE), (3000, 1, HELD)):
        server.ttl_ms, server.version = ttl_ms, version
        assert await check.confirm() == verdict, (ttl_ms, version)
    server.gate = asyncio.Event()  # an answer used long after its ask was sent (a freeze in between)
    asked = server.asks
    late = asyncio.ensure_future(check.confirm())
    while server.asks == asked:  # until the ask is on the wire
        await asyncio.sleep(0)
    clock.advance(0.5)
    server.gate.set()
    assert await late == STALE
    server.gate = None
    # the answer came at once, then the node froze before this request's turn: stale as well
    waiting = asyncio.ensure_future(check.confirm())
    await asyncio.sleep(0)
    assert check._next is not None
    check._next.add_done_callback(lambda _answer: clock.advance(0.5))  # runs before the waiter resumes
    assert await waiting == STALE
    server.fail = True
    assert await check.confirm() == LAPSED


async def test_a_stopped_clock_does_not_let_a_request_out_once_redis_says_the_lease_is_gone() -> None:
    """The node's clock stopped (FakeClock never advances): by it the lease holds forever. Redis says
    the member key is gone: the request waits until a heartbeat and a table read renew the lease, and
    the table it then reads took the host away: not sent."""
    server, clock, lease = _Server(), FakeClock(), Lease(3.0, 0.25)
    sent: list[str] = []

    class Http:
        async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> Any:
            sent.append(url)

    owned = {"h1": True}
    http = FencedHttp(Http(), lease, clock, lambda host: owned[host], "b",
                      ServerCheck(server.probe, lambda: server.version, 0.25, clock.monotonic, 0.35))
    lease.renewed(0.0)
    http.table_read(lease.mark())
    await http.fetch("http://h1/a")
    assert sent == ["http://h1/a"]
    server.ttl_ms = -2  # the key expired in Redis's time; the others took b's buckets
    request = asyncio.ensure_future(http.fetch("http://h1/b"))
    await asyncio.sleep(0.2)
    assert not request.done() and sent == ["http://h1/a"] and http.counts["server_refused"] >= 1
    server.ttl_ms, server.version, owned["h1"] = 3000, 2, False  # the heartbeat, then the new table
    lease.renewed(clock.monotonic())
    http.table_read(lease.mark())
    with pytest.raises(Fenced):
        await asyncio.wait_for(request, 5.0)
    assert sent == ["http://h1/a"]


async def test_an_ask_that_fails_with_a_client_error_is_lapsed_and_the_next_ask_is_still_answered() -> None:
    """Nemesis seed 1: the lease check raised redis-py's RuntimeError on a connection Redis dropped; the
    asking task died, the ask made meanwhile was never answered and every request of the node waited
    for it: the node never fetched or ended again."""
    gate, asks = asyncio.Event(), [0]

    async def probe() -> tuple[int, int | None]:
        asks[0] += 1
        if asks[0] == 1:
            await gate.wait()
            raise RuntimeError("unable to perform operation on <TCPTransport closed=True>; the handler is closed")
        return 3000, 1

    check = ServerCheck(probe, lambda: 1, 0.25, FakeClock().monotonic, 0.35)
    first = asyncio.ensure_future(check.confirm())
    while asks[0] == 0:  # until the ask is on the wire
        await asyncio.sleep(0)
    later = asyncio.ensure_future(check.confirm())  # came after it was sent: waits for the next ask
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.wait_for(first, 5) == LAPSED
    assert await asyncio.wait_for(later, 5) == HELD
    assert await asyncio.wait_for(check.confirm(), 5) == HELD
