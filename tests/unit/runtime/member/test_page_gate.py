"""The page gate of a cluster node (``runtime.member.page_gate``) over the in-process backend:
the lease and ownership before a request, page permits and a cycle's budget before a page."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from webgather.clock import FakeClock
from webgather.cluster.handoff import Ownership
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of, initial
from webgather.config import ClusterConfig, CrawlConfig
from webgather.errors import Fenced
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.runtime.engine.parts import NodeParts, open_parts
from webgather.runtime.member.budget import budget_key
from webgather.runtime.member.page_gate import PageGate
from webgather.runtime.member.permits import COUNTER
from webgather.urls import fingerprint

M = 8
CLUSTER = ClusterConfig(n_buckets=M, heartbeat_s=0.05, member_ttl_s=1.0, lease_margin_s=0.25)


class StubHttp:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        self.sent.append(url)
        return FetchResult(url=url, started_at=0.0, elapsed_s=0.0, error="connect")


@dataclasses.dataclass
class Crawl:
    """What the gate asks of the crawl (``page_gate.Dispatcher``), set by each test."""

    fetching: int = 0
    finished: bool = False

    def running(self) -> int:
        return self.fetching

    def quiet(self) -> bool:
        return self.fetching == 0

    def idle(self) -> bool:
        return self.finished


def _parts_of(tmp_path: Path, clock: FakeClock | None = None, **config: Any) -> Any:
    return open_parts(CrawlConfig(out_dir=str(tmp_path), cluster=CLUSTER, **config), tmp_path, node_id="a",
                      clock=clock, n_buckets=M)


def _queue(parts: NodeParts, url: str = "http://q.test/1") -> None:
    parts.frontier.add([CrawlItem(url, fingerprint(url))], 0.0)


async def _until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.01)


@pytest.fixture
async def stubbed(tmp_path: Path) -> AsyncIterator[tuple[NodeParts, StubHttp, FakeClock]]:
    clock, http = FakeClock(), StubHttp()
    async with _parts_of(tmp_path, clock) as parts:
        yield dataclasses.replace(parts, http=http), http, clock


async def test_a_gate_without_limits_lets_every_page_start(tmp_path: Path) -> None:
    async with _parts_of(tmp_path) as parts:
        gate = PageGate(parts, InProcessHub(M).coordinator(), Ownership("a"), None, wake=lambda: None)
        assert not gate.limited and gate.permits is None and gate.budget is None
        assert gate.permit(10**6) and gate.activity() == 0
        assert gate.idle(Crawl(finished=True)) and not gate.idle(Crawl(finished=False))


async def test_a_request_waits_for_a_confirmed_lease_and_goes_only_to_owned_hosts(
        stubbed: tuple[NodeParts, StubHttp, FakeClock]) -> None:
    parts, http, clock = stubbed
    ownership = Ownership("a")
    gate = PageGate(parts, InProcessHub(M).coordinator(), ownership, None, wake=lambda: None)
    assert gate.parts.http is gate.http  # the node crawls through the fence
    ownership.adopt(initial(["a", "b"], M), clock.monotonic())
    mine = next(h for h in (f"h{i}.test" for i in range(100)) if ownership.is_ready(bucket_of(h, M)))
    theirs = next(h for h in (f"h{i}.test" for i in range(100)) if not ownership.is_ready(bucket_of(h, M)))
    waiting = asyncio.create_task(gate.parts.http.fetch(f"http://{mine}/"))
    await asyncio.sleep(0.15)  # never renewed: nothing is sent
    assert not waiting.done() and http.sent == []
    mark = gate.mark()
    gate.renewed(clock.monotonic())
    gate.table_read(mark)  # a read sent before the renewal confirms nothing
    await asyncio.sleep(0.15)
    assert not waiting.done()
    gate.table_read(gate.mark())
    await asyncio.wait_for(waiting, 5.0)
    assert http.sent == [f"http://{mine}/"]
    with pytest.raises(Fenced):
        await gate.parts.http.fetch(f"http://{theirs}/")
    assert http.sent == [f"http://{mine}/"] and gate.http.counts["fenced"] == 1


async def test_max_pages_starts_a_page_only_on_a_permit_and_gives_the_unused_back(tmp_path: Path) -> None:
    hub = InProcessHub(M)
    woken: list[int] = []
    async with _parts_of(tmp_path, max_pages=3) as parts:
        gate = PageGate(parts, hub.coordinator(), Ownership("a"), None, wake=lambda: woken.append(1))
        assert gate.limited and gate.permits is not None
        _queue(parts)
        assert not gate.permit(parts.stats.pages)  # none held: a batch is asked in the background
        await _until(lambda: bool(woken))
        assert gate.permit(parts.stats.pages) and gate.activity() == 1
        assert (await hub.coordinator().counters())[COUNTER] == 1
        assert not gate.permit(parts.stats.pages + 1)  # the one fetch running holds it
        await gate.give_back(Crawl())
        assert (await hub.coordinator().counters())[COUNTER] == 0


async def test_a_node_blocked_on_permits_counts_as_idle_and_asks_again_at_its_beat(tmp_path: Path) -> None:
    hub = InProcessHub(M)
    other = hub.coordinator()
    assert await other.take_permits(COUNTER, 1, 1) == 1  # another node holds the only permit
    async with _parts_of(tmp_path, max_pages=1) as parts:
        gate = PageGate(parts, hub.coordinator(), Ownership("a"), None, wake=lambda: None)
        _queue(parts)
        crawl = Crawl(finished=False)  # work queued, nothing running
        assert not gate.permit(parts.stats.pages)
        assert gate.permits is not None
        await _until(lambda: gate.permits is not None and gate.permits.exhausted)
        assert gate.idle(crawl)  # blocked: the crawl's end need not wait for it
        await other.incr(COUNTER, -1)  # given back
        await gate.beat(crawl)
        assert not gate.idle(crawl) and gate.permit(parts.stats.pages)


async def test_a_cycle_budget_is_drawn_in_chunks_and_a_chunk_follows_the_table(tmp_path: Path) -> None:
    hub = InProcessHub(M)
    woken: list[int] = []
    cycle: Any = SimpleNamespace(parts=SimpleNamespace(config=SimpleNamespace(
        recrawl=SimpleNamespace(budget_per_cycle=1000))), spec=SimpleNamespace(cycle=3))
    async with _parts_of(tmp_path, max_pages=5) as parts:
        gate = PageGate(parts, hub.coordinator(), Ownership("a"), cycle, wake=lambda: woken.append(1))
        assert gate.permits is None  # a cycle is not limited by the crawl's max_pages
        assert gate.budget is not None and gate.budget.chunk == 64
        assert not gate.permit(parts.stats.pages)  # no grant yet
        _queue(parts)
        await gate.tick(Crawl())
        assert woken and gate.permit(parts.stats.pages) and not gate.permit(parts.stats.pages + 64)
        assert (await hub.coordinator().counters())[budget_key(3)] == 64
        gate.share(4)  # four nodes in the table: an eighth of a quarter
        assert gate.budget.chunk == 1000 // 32
        assert not gate.idle(Crawl())  # work queued and grant left
