"""ArchiveWriter: the background thread, completion of log entries, backpressure, errors."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from webgather.config import StoreConfig
from webgather.errors import StoreError
from webgather.store.crawllog import read_crawl_log
from webgather.store.linklog import read_anchors, read_edges
from webgather.store.warc import ArchiveRef
from webgather.store.writer import ArchiveWriter
from webgather.urls import fingerprint, host_key

from store_helpers import page


def _links(url: str) -> list[tuple[str, int, int, str, bool]]:
    return [(url, fingerprint(url), fingerprint(host_key(url)), "a", False)]


async def test_fetches_logs_and_links_are_written_and_refs_reported(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())
    loop = asyncio.get_running_loop()
    future: asyncio.Future[ArchiveRef | None] = loop.create_future()
    entry = {"url": "http://example.com/a", "status": 200}
    writer.submit_fetch(page(), entry, _links("http://example.com/b"),
                        on_ref=lambda ref: loop.call_soon_threadsafe(future.set_result, ref))
    writer.submit_log({"url": "http://example.com/c", "status": None, "error": "timeout"})
    writer.submit_fetch(page("http://example.com/d", status=None, error="dns"), {"url": "http://example.com/d"}, None)
    ref = await asyncio.wait_for(future, 5)
    await writer.drain()
    assert entry == {"url": "http://example.com/a", "status": 200}  # the caller's dict is not touched
    logged = list(read_crawl_log(tmp_path / "crawl.log.jsonl"))
    assert ref is not None and logged[0] == {**entry, "warc_file": ref.filename, "warc_offset": ref.offset,
                                             "warc_length": ref.length, "digest": ref.payload_digest}
    assert [e["url"] for e in logged] == ["http://example.com/a", "http://example.com/c", "http://example.com/d"]
    assert "warc_file" not in logged[2]
    assert len(read_edges(tmp_path / "links.bin")) == 1
    assert [p["url"] for p in read_anchors(tmp_path / "anchors.jsonl.gz")] == ["http://example.com/a"]
    revisit_ref: list[ArchiveRef | None] = []
    writer.submit_revisit(page(status=304, body=b""), ref, "server-not-modified", {"url": "http://example.com/a"},
                          on_ref=revisit_ref.append)
    writer.close()
    writer.close()
    assert revisit_ref[0] is not None and revisit_ref[0].payload_digest == ref.payload_digest
    stats = writer.stats()
    assert (stats.responses, stats.revisits, stats.log_entries, stats.pages_with_links) == (1, 1, 4, 1)
    with pytest.raises(StoreError, match="closed"):
        writer.submit_log({"url": "x"})


def test_link_log_can_be_off(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig(write_link_log=False))
    writer.submit_fetch(page(), {"url": "http://example.com/a"}, _links("http://example.com/b"))
    writer.close()
    assert not (tmp_path / "links.bin").exists()


def test_idle_flush_writes_the_log_without_drain(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig(), idle_flush_s=0.01)
    writer.submit_log({"url": "http://example.com/"})
    flushed = threading.Event()
    for _ in range(500):
        if (tmp_path / "crawl.log.jsonl").stat().st_size:
            flushed.set()
            break
        flushed.wait(0.01)
    writer.close()
    assert flushed.is_set()


async def test_a_full_queue_blocks_and_wait_for_room_waits(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig(), queue_max_items=2)
    gate, entered = threading.Event(), threading.Event()

    def hold(_ref: ArchiveRef | None) -> None:
        entered.set()
        gate.wait(5)

    writer.submit_fetch(page(), {"url": "http://example.com/a"}, None, on_ref=hold)
    await asyncio.sleep(0)  # submits on a loop reach the thread when the loop turns
    assert entered.wait(5)
    writer.submit_log({"url": "1"})
    writer.submit_log({"url": "2"})  # the bound (2) is now reached while the thread is held
    submitted = threading.Event()
    blocked = threading.Thread(target=lambda: (writer.submit_log({"url": "3"}), submitted.set()))
    blocked.start()
    assert not submitted.wait(0.2)
    room = asyncio.ensure_future(writer.wait_for_room())
    await asyncio.sleep(0.05)
    assert not room.done()
    gate.set()
    await asyncio.wait_for(room, 5)
    blocked.join(5)
    assert submitted.is_set() and writer.stats().full_queue_waits == 1
    await writer.drain()
    writer.close()
    assert [e["url"] for e in read_crawl_log(tmp_path / "crawl.log.jsonl")] == ["http://example.com/a", "1", "2", "3"]


async def test_errors_in_the_thread_surface_as_store_errors(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig(), queue_max_items=4)
    writer.submit_log({"url": "http://example.com/", "bad": {1, 2}})
    with pytest.raises(StoreError, match="archive writer failed.*not JSON data"):
        await writer.drain()
    with pytest.raises(StoreError, match="archive writer failed"):
        writer.submit_log({"url": "ok"})
    with pytest.raises(StoreError, match="archive writer failed"):
        writer.close()


def test_a_failing_callback_is_reported_not_lost(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())

    def boom(_ref: ArchiveRef | None) -> None:
        raise RuntimeError("callback broke")

    writer.submit_fetch(page(), {"url": "http://example.com/a"}, None, on_ref=boom)
    with pytest.raises(StoreError, match="callback broke"):
        writer.flush()
    with pytest.raises(StoreError):
        writer.close()


def test_bad_settings(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        ArchiveWriter.open(tmp_path, "n1", StoreConfig(), queue_max_items=0)


async def test_awaitable_write_returns_the_ref_and_raises_on_failure(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())
    ref = await writer.write(page(), {"url": "http://example.com/a"}, _links("http://example.com/b"))
    assert ref is not None and ref.filename == "webgather-n1-00000.warc.gz"
    assert await writer.write(page(status=None, error="dns"), {"url": "http://example.com/x"}) is None
    revisit = await writer.write_revisit(page(body=b"", status=304), ref, "server-not-modified", {"url": "http://example.com/a"})
    assert revisit.payload_digest == ref.payload_digest and revisit.offset > ref.offset
    # bad input is refused at the call and the writer goes on
    with pytest.raises(StoreError, match="differs"):
        await writer.write_revisit(page(body=b"other"), ref, "identical-payload-digest", {"url": "http://example.com/a"})
    with pytest.raises(StoreError, match="differs"):
        writer.submit_revisit(page(body=b"other"), ref, "identical-payload-digest", {"url": "http://example.com/a"})
    with pytest.raises(StoreError, match="not a time"):
        writer.submit_fetch(page(started_at=float("inf")), {"url": "http://example.com/a"})
    with pytest.raises(StoreError, match="not a time"):
        await writer.write(page(started_at=-5.0), {"url": "http://example.com/a"})
    assert await writer.write(page("http://example.com/fine"), {"url": "http://example.com/fine"}) is not None
    # a failure inside the thread is fatal: this one and every later call report it
    with pytest.raises(StoreError, match="archive writer failed.*not JSON"):
        await writer.write(page(), {"url": "http://example.com/again", "bad": object()})
    with pytest.raises(StoreError, match="archive writer failed"):
        await writer.write(page(), {"url": "http://example.com/again"})
    with pytest.raises(StoreError):
        writer.close()
    with pytest.raises(StoreError):
        await writer.drain()


async def test_submits_of_one_loop_iteration_reach_the_thread_together_and_in_order(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())
    urls = [f"http://example.com/{i}" for i in range(20)]
    for url in urls[:10]:
        writer.submit_log({"url": url})
    assert writer._queue.qsize() == 0 and len(writer._pending or ()) == 10  # held until the loop turns
    await asyncio.sleep(0)
    assert writer._pending is None
    for url in urls[10:]:
        writer.submit_log({"url": url})
    writer.flush()  # blocking, on the loop's own thread: hands the held ones over first
    assert [e["url"] for e in read_crawl_log(tmp_path / "crawl.log.jsonl")] == urls
    writer.submit_log({"url": "http://example.com/last"})
    writer.close()  # also hands over what the loop holds
    assert [e["url"] for e in read_crawl_log(tmp_path / "crawl.log.jsonl")][-1] == "http://example.com/last"


async def test_held_submits_count_against_the_bound(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig(), queue_max_items=4)
    for i in range(12):  # past the bound within one iteration: handed over, then backpressure
        writer.submit_log({"url": f"http://example.com/{i}"})
    await writer.drain()
    writer.close()
    assert len(list(read_crawl_log(tmp_path / "crawl.log.jsonl"))) == 12


@pytest.mark.parametrize("call", ["rotate", "write", "drain"])
async def test_a_waiter_cancelled_mid_call_does_not_fail_the_writer(tmp_path: Path, call: str) -> None:
    """The crawl stopping cancels a task that awaits the writer (nemesis file seed 24: a rotate for a
    checkpoint when Redis lost its data): the job is still done, and the writer goes on and closes."""
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())
    gate = threading.Event()  # the writer's thread is held in the first job's callback until it is set
    writer.submit_fetch(page("http://example.com/held"), {"url": "http://example.com/held"}, None,
                        on_ref=lambda _ref: gate.wait(5))
    calls = {"rotate": writer.rotate, "drain": writer.drain,
             "write": lambda: writer.write(page("http://example.com/w"), {"url": "http://example.com/w"})}
    task = asyncio.ensure_future(calls[call]())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    assert await writer.write(page("http://example.com/after"), {"url": "http://example.com/after"}) is not None
    writer.close()
    urls = [e["url"] for e in read_crawl_log(tmp_path / "crawl.log.jsonl")]
    assert urls[0] == "http://example.com/held" and urls[-1] == "http://example.com/after"
