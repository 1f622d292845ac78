"""Fencing of a cluster node's requests (``runtime.member.fence``) with a fake clock and a stub HTTP client."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from webgather.config import CrawlConfig, RobotsConfig
from webgather.errors import Fenced
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.clock import FakeClock
from webgather.runtime.member.fence import FencedHttp, Lease
from webgather.runtime.engine.node import CrawlNode
from webgather.runtime.engine.parts import open_parts
from webgather.urls import fingerprint

TTL_S, MARGIN_S = 5.0, 0.25


class StubHttp:
    """Records the URLs it was asked for; answers nothing useful (the tests look at what was sent)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        self.sent.append(url)
        return FetchResult(url=url, started_at=0.0, elapsed_s=0.0, error="connect")


def test_a_renewal_counts_only_after_a_table_read_sent_after_it() -> None:
    lease = Lease(TTL_S, MARGIN_S)
    assert not lease.valid(0.0)  # never renewed: nothing may start
    mark_before = lease.mark()
    lease.renewed(1.0)  # heartbeat sent at t=1 succeeded
    lease.table_read(mark_before)  # a table read sent before that heartbeat succeeded: proves nothing
    assert not lease.valid(1.5)
    lease.table_read(lease.mark())
    assert lease.valid(1.5) and lease.valid(1.0 + TTL_S - MARGIN_S - 0.001)
    assert not lease.valid(1.0 + TTL_S - MARGIN_S)  # stops margin before the heartbeat key can expire
    lease.renewed(0.5)  # an older renewal reported late never moves the lease back
    lease.table_read(lease.mark())
    assert lease.expires_at() == 1.0 + TTL_S - MARGIN_S


async def test_a_node_frozen_past_its_lease_sends_nothing_until_renewed_and_then_not_to_lost_hosts() -> None:
    clock, http, owned = FakeClock(), StubHttp(), {"a.test", "b.test"}
    lease = Lease(TTL_S, MARGIN_S)
    fenced = FencedHttp(http, lease, clock, owns=lambda host: host in owned, node="n1")
    lease.renewed(0.0)
    fenced.table_read(lease.mark())
    await fenced.fetch("http://a.test/1")
    assert http.sent == ["http://a.test/1"]
    clock.advance(15.0)  # SIGSTOP for 15 s: the others took b.test's bucket meanwhile
    to_b = asyncio.create_task(fenced.fetch("http://b.test/2"))
    to_a = asyncio.create_task(fenced.fetch("http://a.test/3"))
    await asyncio.sleep(0.2)  # several re-checks of the lease: still lapsed, nothing sent
    assert http.sent == ["http://a.test/1"] and not to_b.done() and not to_a.done()
    assert fenced.counts["lease_waits"] == 2
    lease.renewed(clock.monotonic())  # the first beat after the thaw: heartbeat (the table it read was stale)
    await asyncio.sleep(0.1)
    assert http.sent == ["http://a.test/1"]
    owned.discard("b.test")  # the next beat reads and adopts the new table...
    fenced.table_read(lease.mark())  # ...which confirms the renewal
    await to_a
    with pytest.raises(Fenced):
        await to_b
    assert http.sent == ["http://a.test/1", "http://a.test/3"] and fenced.counts["fenced"] == 1


async def test_a_request_for_a_bucket_lost_while_it_waited_for_a_slot_is_not_sent() -> None:
    clock, http = FakeClock(), StubHttp()
    lease = Lease(TTL_S, MARGIN_S)
    fenced = FencedHttp(http, lease, clock, owns=lambda host: False, node="n1")
    lease.renewed(0.0)
    fenced.table_read(lease.mark())
    with pytest.raises(Fenced):
        await fenced.fetch("http://c.test/robots.txt")
    assert http.sent == []


class FencingHttp:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        self.asked.append(url)
        raise Fenced(f"{url} not ours")


async def test_a_fenced_page_goes_back_to_its_queue_unfetched_and_unlogged(tmp_path: Path) -> None:
    config = CrawlConfig(out_dir=str(tmp_path), robots=RobotsConfig(obey=False))  # the page's fetch is asked
    async with open_parts(config, tmp_path, clock=FakeClock()) as parts:
        parts.http = http = FencingHttp()
        node = CrawlNode(parts, linger=False)
        url = "http://d.test/page"
        item = CrawlItem(url, fingerprint(url), depth=0)
        parts.frontier.add([item], 0.0)
        parts.frontier.defer_host("d.test", 0.0)
        taken, _wake = parts.frontier.next_ready(0.0)
        assert taken is not None
        await node._slots.acquire()
        await node._process(taken)
        assert http.asked == [url]
        assert parts.frontier.pending() == 1 and parts.frontier.in_flight() == 0
        again, _wake = parts.frontier.next_ready(100.0)
        assert again is not None and again.url == url and again.attempt == 0
        assert parts.stats.attempts == 0 and sum(parts.stats.errors.values()) == 0
