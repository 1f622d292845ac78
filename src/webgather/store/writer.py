"""One background thread that owns the archive, the crawl log and the link log.

The event loop only builds small tuples and puts them on a bounded queue
(backpressure: a full queue blocks :meth:`ArchiveWriter.submit_fetch`,
or the caller first awaits :meth:`ArchiveWriter.wait_for_room`). The queue is a
``queue.SimpleQueue`` bounded by its size: ``queue.Queue``'s lock and condition
cost the loop about 10 us a page (profiled: 7 % of the crawler's GIL time),
the C queue's put well under one. The thread
builds records, digests and gzips them (zlib and hashlib release the GIL on
large buffers) and writes them. A node keeps both threads on one CPU
(:mod:`webgather.runtime.engine.affinity`): handing the GIL between two cores cost
more than the parallel gzip gained. An
error in the thread is kept and raised as :class:`StoreError` (a failed write
as :class:`WriteFailed`, disk full) by the next
``submit_*``, :meth:`drain` or :meth:`close`; the thread keeps taking items
off the queue (dropping them) so no caller blocks forever on a dead writer.
Logs are flushed every N entries, on :meth:`drain`/:meth:`flush`, and when
no item arrived for ``idle_flush_s``.

Submits made on a running event loop are handed to the thread together, once
per loop iteration (``call_soon``): each put that finds the thread waiting
wakes it, and on the shared CPU the wake-up preempts the loop only for the
thread to block on the GIL the loop holds. One hand-over per iteration instead
of one per page cut the crawler's CPU per page by 4-9 % (two 5-round runs of
bench/node_ab.py; lower in each of the 10 pairs).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, InvalidStateError
from pathlib import Path
from typing import Any

from webgather.config import StoreConfig
from webgather.errors import StoreError, WriteFailed
from webgather.fetch.model import FetchResult
from webgather.store.crawllog import CRAWL_LOG_NAME, CrawlLog, encode_entry
from webgather.store.linklog import Link, LinkLog
from webgather.store.records import RevisitProfile
from webgather.store.warc import Archive, ArchiveRef, check_fetch, check_revisit
from webgather.store.writejobs import Job as _Job
from webgather.store.writejobs import RefCallback, WriterStats
from webgather.store.writejobs import copy_links as _copy
from webgather.urls import fingerprint, host_key

__all__ = ["ArchiveWriter", "RefCallback", "WriterStats"]

_BATCH_JOBS = 64
"""Fetches archived with one commit at most: a loop iteration's hand-over is usually fewer."""

class ArchiveWriter:
    """The store's one entry point for a running node (see the module docstring)."""

    def __init__(
        self,
        archive: Archive,
        crawl_log: CrawlLog,
        link_log: LinkLog | None,
        queue_max_items: int,
        idle_flush_s: float,
    ) -> None:
        self.archive, self.crawl_log, self.link_log = archive, crawl_log, link_log
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._max_items = queue_max_items
        self._room_wanted = False
        self._pending: list[_Job] | None = None
        self._pending_lock = threading.Lock()
        self._idle_flush_s = idle_flush_s
        self._room = threading.Event()
        self._error: BaseException | None = None
        self._closed = False
        self._counts = {"responses": 0, "revisits": 0, "log_entries": 0, "pages_with_links": 0, "full_queue_waits": 0}
        self._thread = threading.Thread(target=self._run, name="webgather-store", daemon=True)
        self._thread.start()

    @classmethod
    def open(
        cls,
        out_dir: Path,
        node: str,
        config: StoreConfig,
        *,
        queue_max_items: int = 1024,
        idle_flush_s: float = 0.5,
        ids: Callable[[], str] | None = None,
        now_iso: Callable[[], str] | None = None,
    ) -> ArchiveWriter:
        """Open (repairing after a crash) ``out_dir/warc``, ``crawl.log.jsonl`` and the link log."""
        if queue_max_items < 1 or idle_flush_s <= 0:
            raise StoreError("queue_max_items must be >= 1 and idle_flush_s > 0")
        out_dir = Path(out_dir)
        archive = Archive.open(out_dir, node, config, ids=ids, now_iso=now_iso)
        try:
            crawl_log = CrawlLog.open(out_dir / CRAWL_LOG_NAME)
        except BaseException:
            archive.close()
            raise
        try:
            link_log = LinkLog.open(out_dir) if config.write_link_log else None
        except BaseException:
            archive.close()
            crawl_log.close()
            raise
        return cls(archive, crawl_log, link_log, queue_max_items, idle_flush_s)

    def submit_fetch(
        self,
        result: FetchResult,
        log_entry: Mapping[str, object],
        links: Sequence[Link] | None = None,
        *,
        on_ref: RefCallback | None = None,
        rendered: bytes | None = None,
    ) -> None:
        """Archive ``result`` (if it has a response), log ``log_entry`` completed with
        ``warc_file``, ``warc_offset``, ``warc_length``, ``digest``, and record
        ``links`` (None: the page was not parsed). A result the archive cannot
        take (e.g. ``started_at`` not a time) raises :class:`StoreError` here.
        ``rendered``: the page's rendered DOM, archived as a ``conversion`` record."""
        self._put(_Job("fetch", check_fetch(result), dict(log_entry), _copy(links), on_ref, rendered=rendered))

    def submit_revisit(
        self,
        result: FetchResult,
        original: ArchiveRef,
        profile: RevisitProfile,
        log_entry: Mapping[str, object],
        *,
        on_ref: RefCallback | None = None,
    ) -> None:
        """Write a revisit record for ``result`` pointing at ``original``, and log it.

        The revisit is checked here (:func:`check_revisit`: a response, a known
        profile, for ``identical-payload-digest`` the same payload digest)."""
        check_revisit(result, original, profile)
        self._put(_Job("revisit", result, dict(log_entry), None, on_ref, original, profile))

    async def write(
        self, result: FetchResult, log_entry: Mapping[str, object], links: Sequence[Link] | None = None, *,
        rendered: bytes | None = None,
    ) -> ArchiveRef | None:
        """:meth:`submit_fetch` without blocking the loop, returning the ref once written.

        Raises :class:`StoreError` if this write (or an earlier one) failed.
        The crawl-log line is then in the log's buffer; it reaches the file at
        the next flush (every N entries, :meth:`drain`, or when idle).
        """
        done: Future[ArchiveRef | None] = Future()
        await self._put_async(_Job("fetch", check_fetch(result), dict(log_entry), _copy(links), done=done,
                                   rendered=rendered))
        return await asyncio.wrap_future(done)

    async def write_revisit(
        self, result: FetchResult, original: ArchiveRef, profile: RevisitProfile, log_entry: Mapping[str, object]
    ) -> ArchiveRef:
        """:meth:`submit_revisit`, awaited like :meth:`write`."""
        check_revisit(result, original, profile)
        done: Future[ArchiveRef] = Future()
        await self._put_async(_Job("revisit", result, dict(log_entry), None, None, original, profile, done))
        return await asyncio.wrap_future(done)

    def submit_log(self, entry: Mapping[str, object]) -> None:
        """Log an attempt that archives nothing (no response, robots-disallowed, ...)."""
        self._put(_Job("log", entry=dict(entry)))

    async def wait_for_room(self) -> None:
        """Return once a submit would not block (the queue has room)."""
        if self._full():
            self._hand_over()
        while self._full():
            self._check()
            await asyncio.to_thread(self._wait_room)

    async def drain(self) -> None:
        """Wait until everything submitted so far is written and the logs flushed."""
        done: Future[None] = Future()
        await self._put_async(_Job("flush", done=done))
        await asyncio.wrap_future(done)
        self._check()

    def flush(self) -> None:
        """Blocking :meth:`drain` (for threads and shutdown code)."""
        done: Future[None] = Future()
        self._hand_over()  # what the loop submitted before this flush goes first
        self._put(_Job("flush", done=done))
        self._hand_over()  # the loop may be this thread, blocked below
        done.result()
        self._check()

    async def rotate(self) -> tuple[list[str], int]:
        """Write what was submitted, close the WARC file being written; ``Archive.rotate``'s answer."""
        done: Future[tuple[list[str], int]] = Future()
        await self._put_async(_Job("rotate", done=done))
        return await asyncio.wrap_future(done)

    def close(self) -> None:
        """Write everything, close the files and stop the thread. Idempotent."""
        if not self._closed:
            self._closed = True
            self._hand_over()
            self._queue.put(_Job("stop"))
            self._thread.join()
        self._check()

    def stats(self) -> WriterStats:
        """Counts so far (read without locking: a snapshot, not a transaction)."""
        return WriterStats(**self._counts)

    def _put(self, job: _Job) -> None:
        self._check()
        if self._closed:
            raise StoreError("the archive writer is closed")
        if self._full():
            self._counts["full_queue_waits"] += 1
            self._hand_over()
            while self._full():
                self._check()
                self._wait_room()
        self._enqueue(job)

    async def _put_async(self, job: _Job) -> None:
        self._check()
        if self._closed:
            raise StoreError("the archive writer is closed")
        if self._full():
            self._counts["full_queue_waits"] += 1
            await self.wait_for_room()
        self._enqueue(job)

    def _enqueue(self, job: _Job) -> None:
        with self._pending_lock:
            if self._pending is not None:
                self._pending.append(job)
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a plain thread: straight to the writer
                self._queue.put(job)
                return
            self._pending = [job]
            loop.call_soon(self._hand_over)

    def _hand_over(self) -> None:
        with self._pending_lock:  # puts under the lock too: batches reach the thread in order
            batch, self._pending = self._pending, None
            for job in batch or ():
                self._queue.put(job)

    def _check(self) -> None:
        if self._error is not None:
            raise self._failure() from self._error

    def _failure(self) -> StoreError:
        """The kept error for a caller: a failed write (disk full) keeps its type and
        message, so the crawl stops on it and its one line names the file."""
        if isinstance(self._error, WriteFailed):
            return WriteFailed(str(self._error))
        return StoreError(f"archive writer failed: {self._error}")

    def _full(self) -> bool:
        """A soft bound: two submitters may both see room and pass it by one."""
        return self._queue.qsize() + len(self._pending or ()) >= self._max_items

    def _wait_room(self) -> None:
        # Wanted before the check: a get after the check sees it and sets the event.
        self._room_wanted = True
        self._room.clear()
        if self._full():
            self._room.wait(timeout=1.0)

    def _run(self) -> None:
        held: _Job | None = None  # taken off the queue after a run of fetches: next
        while True:
            job, held = (held, None) if held is not None else (self._get(), None)
            if job is not None and job.kind == "stop":
                break
            if self._error is not None:
                self._fail(job)
                continue
            batch = [job] if job is not None and job.kind == "fetch" else []
            try:
                if batch:
                    held = self._take_fetches(batch)
                    self._handle_fetches(batch)
                else:
                    self._handle(job) if job is not None else self._flush_logs()
            except Exception as exc:  # the worker's top loop: keep the error for the caller
                self._error = exc
                for failed in batch if batch else (job,):
                    self._fail(failed)
        try:
            self._close_all()
        except Exception as exc:  # the worker's top loop
            self._error = self._error or exc

    def _get(self) -> _Job | None:
        try:
            job: _Job | None = self._queue.get(timeout=self._idle_flush_s)
        except queue.Empty:
            job = None
        self._signal_room()
        return job

    def _signal_room(self) -> None:
        if self._room_wanted:  # Event.set takes a lock: only when a submitter waits
            self._room_wanted = False
            self._room.set()

    def _take_fetches(self, batch: list[_Job]) -> _Job | None:
        """Add the fetches already queued behind ``batch[0]`` (at most _BATCH_JOBS in all), so
        their units reach the WARC in one write; the first other job taken is returned."""
        held = None
        while len(batch) < _BATCH_JOBS:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job.kind != "fetch":
                held = job
                break
            batch.append(job)
        self._signal_room()
        return held

    def _handle_fetches(self, batch: list[_Job]) -> None:
        """Archive a run of fetches with one commit (:meth:`Archive.commit`), then log them:
        a log entry never points at a record that did not reach the WARC."""
        refs: list[ArchiveRef | None] = []
        failure = None
        for job in batch:
            assert job.result is not None
            try:
                refs.append(self.archive.write_fetch(job.result, job.rendered, defer=True))
            except Exception as exc:  # the jobs before it are still written and logged
                failure = exc
                break
        self.archive.commit()
        for job, ref in zip(batch, refs):
            self._counts["responses"] += ref is not None
            self._finish(job, ref)
        if failure is not None:
            raise failure

    def _fail(self, job: _Job | None) -> None:
        if job is not None and job.done is not None:
            with _unless_cancelled():
                job.done.set_exception(self._failure())

    def _handle(self, job: _Job) -> None:
        if job.kind in ("flush", "rotate"):
            self._flush_logs()
            assert job.done is not None
            answer = self.archive.rotate() if job.kind == "rotate" else None
            with _unless_cancelled():
                job.done.set_result(answer)
            return
        assert job.entry is not None
        if job.kind == "log":
            self._log(job.entry)
            return
        assert job.kind == "revisit" and job.result is not None and job.original is not None  # fetches: _handle_fetches
        ref = self.archive.write_revisit(job.result, job.original, job.profile)
        self._counts["revisits"] += 1
        self._finish(job, ref)

    def _finish(self, job: _Job, ref: ArchiveRef | None) -> None:
        """Log a written job's entry and links; settle its callback and future."""
        assert job.entry is not None and job.result is not None
        if ref is not None:
            job.entry.update(warc_file=ref.filename, warc_offset=ref.offset, warc_length=ref.length)
            job.entry["digest"] = ref.payload_digest
        self._log(job.entry)
        if job.links is not None and self.link_log is not None:
            url = job.result.url
            self.link_log.append_page(url, fingerprint(url), fingerprint(host_key(url)), job.links)
            self._counts["pages_with_links"] += 1
        if job.on_ref is not None:
            job.on_ref(ref)
        if job.done is not None:
            with _unless_cancelled():
                job.done.set_result(ref)

    def _log(self, entry: dict[str, Any]) -> None:
        self.crawl_log.append_line(encode_entry(entry))
        self._counts["log_entries"] += 1

    def _flush_logs(self) -> None:
        self.crawl_log.flush()
        if self.link_log is not None:
            self.link_log.flush()

    def _close_all(self) -> None:
        try:
            self.crawl_log.close()
        finally:
            try:
                if self.link_log is not None:
                    self.link_log.close()
            finally:
                self.archive.close()


@contextlib.contextmanager
def _unless_cancelled() -> Iterator[None]:
    """Settle a job's future unless its waiter went away. A task awaiting the writer that is cancelled
    (the crawl stopping) cancels the future ``asyncio.wrap_future`` waited on; the work is done all the
    same. Setting a result on it raised ``InvalidStateError`` in the writer's thread, which then took
    the writer for failed: every later write refused, and the command ended with "archive writer failed"
    (exit 2) instead of its own outcome (nemesis file seed 24: Redis lost its data, the node stopped
    while it rotated its WARC file for a checkpoint)."""
    try:
        yield
    except InvalidStateError:
        pass
