"""Router: own buckets local, cross URLs batched per bucket (R URLs or T seconds), sent-URL cache, page barrier."""

from __future__ import annotations

import asyncio

from webgather.cachepolicy import LruCache
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of
from webgather.cluster.router import Router
from webgather.cluster.wire import UrlBatch, decode
from webgather.frontier.model import CrawlItem
from webgather.clock import FakeClock
from webgather.urls import fingerprint

M = 16


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url), depth=1)


def _router(hub: InProcessHub, clock: FakeClock, local_buckets: set[int], added: list[CrawlItem], **kw: object) -> Router:
    def add_local(items: list[CrawlItem], now: float) -> list[CrawlItem]:
        added.extend(items)
        return items

    return Router("a", hub.transport("a"), clock, n_buckets=M, add_local=add_local,
                  is_local=local_buckets.__contains__, **kw)  # type: ignore[arg-type]


def _urls_for(bucket: int, n: int) -> list[str]:
    out, i = [], 0
    while len(out) < n:
        host = f"h{i}.test"
        if bucket_of(host, M) == bucket:
            out.append(f"http://{host}/p{len(out)}")
        i += 1
    return out


async def test_local_items_go_to_add_local_and_cross_urls_wait_for_a_full_batch() -> None:
    hub, clock, added = InProcessHub(M), FakeClock(), []
    router = _router(hub, clock, {1}, added, batch_urls=3, batch_wait_s=10.0)
    flusher = asyncio.create_task(router.run())
    try:
        local = [_item(u) for u in _urls_for(1, 2)]
        remote = [_item(u) for u in _urls_for(2, 3)]
        assert router.route(local + remote[:2], clock.monotonic()) == local
        assert added == local
        await asyncio.sleep(0.01)
        assert router.stats.messages == 0 and not router.idle()
        router.route(remote[2:], clock.monotonic())
        await router.wait_routed()
        got = await hub.transport("b").receive([2], 10, 0)
        assert len(got) == 1
        batch = decode(got[0].payload)
        assert isinstance(batch, UrlBatch) and [i.url for i in batch.items] == [i.url for i in remote]
        assert router.stats.messages == 1 and router.stats.urls == 3 and router.stats.local == 2
        assert router.stats.bytes == len(got[0].payload) and router.idle()
    finally:
        flusher.cancel()


async def test_a_partial_batch_goes_after_batch_wait_s_and_the_barrier_waits_for_it() -> None:
    hub, added = InProcessHub(M), []
    clock = FakeClock()
    router = _router(hub, clock, set(), added, batch_urls=100, batch_wait_s=0.05)
    flusher = asyncio.create_task(router.run())
    try:
        router.route([_item(_urls_for(3, 1)[0])], clock.monotonic())
        barrier = asyncio.create_task(router.wait_routed())
        await asyncio.sleep(0.02)
        assert not barrier.done()
        clock.advance(0.06)
        await asyncio.wait_for(barrier, 2.0)
        assert await hub.transport("b").pending_count(3) == 1
    finally:
        flusher.cancel()


async def test_the_sent_url_cache_suppresses_repeats() -> None:
    hub, clock, added = InProcessHub(M), FakeClock(), []
    router = _router(hub, clock, set(), added, batch_urls=1, cache=LruCache(100))
    flusher = asyncio.create_task(router.run())
    try:
        url = _urls_for(4, 1)[0]
        for _ in range(5):
            router.route([_item(url)], clock.monotonic())
            await router.wait_routed()
        assert router.stats.urls == 1 and router.stats.cache_saved == 4
        assert await hub.transport("b").pending_count(4) == 1
    finally:
        flusher.cancel()


async def test_flush_sends_everything_now() -> None:
    hub, clock, added = InProcessHub(M), FakeClock(), []
    router = _router(hub, clock, set(), added, batch_urls=100, batch_wait_s=100.0)
    router.route([_item(u) for u in _urls_for(5, 2) + _urls_for(6, 1)], clock.monotonic())
    await router.flush()
    assert router.stats.messages == 2 and router.idle()


class _SlowTransport:
    """Records what was stored; every send takes a little while."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    async def send(self, bucket: int, payload: bytes) -> str:
        await asyncio.sleep(0.005)
        self.sent.append(bucket)
        return str(len(self.sent))


async def test_the_barrier_waits_for_every_batch_of_the_page_even_past_one_send_chunk() -> None:
    clock, n = FakeClock(), 64
    transport = _SlowTransport()
    router = Router("a", transport, clock, n_buckets=n, add_local=lambda items, now: items,  # type: ignore[arg-type]
                    is_local=lambda b: False, batch_urls=1, batch_wait_s=10.0)

    def url_in(bucket: int) -> str:
        return next(f"http://h{i}.test/" for i in range(100_000) if bucket_of(f"h{i}.test", n) == bucket)

    router.route([_item(url_in(0))], clock.monotonic())
    page = [_item(url_in(b)) for b in range(1, 40)]  # 39 more buffers: past one send chunk (16)
    router.route(page, clock.monotonic())
    flusher = asyncio.create_task(router.run())
    try:
        await asyncio.wait_for(router.wait_routed(), 5.0)
        assert len(transport.sent) == 40
    finally:
        flusher.cancel()


async def test_the_barrier_wakes_its_pages_with_one_look_at_what_is_sent_not_one_per_page() -> None:
    hub, clock, added = InProcessHub(M), FakeClock(), []
    router = _router(hub, clock, {1}, added, batch_urls=1000, batch_wait_s=1000.0)
    urls = [u for bucket in range(2, M) for u in _urls_for(bucket, 8)]

    async def page(url: str) -> None:  # a page routes its one cross URL and waits at the barrier
        router.route([_item(url)], clock.monotonic())
        await router.wait_routed()

    barriers = [asyncio.create_task(page(url)) for url in urls]
    await asyncio.sleep(0.01)
    assert not any(b.done() for b in barriers)
    looks = 0
    sent_upto = router.sent_upto

    def counted() -> int:
        nonlocal looks
        looks += 1
        return sent_upto()

    router.sent_upto = counted  # type: ignore[method-assign]
    await router.flush()
    await asyncio.wait_for(asyncio.gather(*barriers), 5.0)
    assert router.idle() and router.stats.urls == len(urls) == 112
    assert looks <= 2, f"{looks} computations of sent_upto for {len(urls)} waiting pages"
