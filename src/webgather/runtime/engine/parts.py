"""The parts of one node, built from a config, and the thin ports the run loop uses.

:func:`open_parts` is the composition root's wiring: clock, resolver, HTTP
client, frontier (state under ``DIR/state``), archive writer, robots gate and
scope. It is an async context manager so that every part is closed (and
flushed) however the crawl ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from webgather.config import CrawlConfig
from webgather.errors import WriteFailed
from webgather.fetch.cookies import CookieHttp, CrawlCookies
from webgather.fetch.http import HttpClient
from webgather.fetch.model import FetchResult
from webgather.fetch.resolver import Resolver
from webgather.frontier.frontier import Frontier
from webgather.logs import node_context
from webgather.robots.gate import RobotsGate
from webgather.runtime.engine.affinity import allowed_cpus, pinned
from webgather.clock import Clock, SystemClock
from webgather.runtime.engine.page_hooks import HookFunctions, PageHooks
from webgather.runtime.engine.parse_pool import ParsePool
from webgather.runtime.engine.render_stage import RenderStage
from webgather.runtime.engine.robots_store import RobotsStore
from webgather.runtime.engine.stats import CrawlStats
from webgather.scope import Scope
from webgather.store.warc import ArchiveRef
from webgather.store.writer import ArchiveWriter

__all__ = ["HttpPort", "NodeParts", "WriterPort", "open_parts", "robots_gate"]

_log = logging.getLogger(__name__)

LinkArgs = tuple[str, int, int, list[tuple[str, int, int, str, bool]]]


class HttpPort(Protocol):
    """What the run loop fetches with: :class:`HttpClient`, or a cluster node's fenced wrapper of it."""

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult: ...


def robots_gate(config: CrawlConfig) -> RobotsGate:
    """The node's robots gate, from ``[robots]``."""
    robots = config.robots
    return RobotsGate(ttl_s=robots.ttl_s, error_retry_s=robots.error_retry_s, retry_factor=robots.retry_factor,
                      max_tries=robots.max_tries, max_hosts=robots.max_hosts, obey=robots.obey,
                      min_gap_s=config.politeness.min_delay_s, unreachable_retry_s=robots.unreachable_retry_s,
                      unreachable_tries=robots.unreachable_tries)


class WriterPort:
    """Awaitable writes that return once the crawl-log line has reached the OS.

    The frontier commits a page as done right after :meth:`write`; a kill -9
    between the two must not leave a done page missing from the crawl log. The
    writer thread buffers log lines, so each write also waits for a flush. The
    flushes are coalesced: all writes waiting while one flush runs share the next.
    """

    def __init__(self, writer: ArchiveWriter) -> None:
        self.writer = writer
        self._waiters: list[asyncio.Future[None]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def write(self, result: FetchResult, entry: dict[str, object], links: LinkArgs | None,
                    rendered: bytes | None = None) -> ArchiveRef | None:
        """Archive and log one result; returns its ref once the log line is flushed.

        The flush job queues behind the write, so its completion covers the write
        (a failed write fails the flush: the writer keeps the error), and only
        the flush is awaited: one thread-to-loop wake-up a flush, not one a page.
        """
        page_links: Sequence[tuple[str, int, int, str, bool]] | None = links[3] if links is not None else None
        refs: list[ArchiveRef | None] = []
        await self.writer.wait_for_room()  # then a blocking put is rare and brief (the writer frees slots itself)
        self.writer.submit_fetch(result, entry, page_links, on_ref=refs.append, rendered=rendered)
        await self._durable()
        return refs[0] if refs else None

    async def log(self, entry: dict[str, object]) -> None:
        await self.writer.wait_for_room()
        self.writer.submit_log(entry)
        await self._durable()

    async def rotate(self) -> tuple[list[str], int]:
        """Close the WARC file being written: :meth:`ArchiveWriter.rotate`."""
        return await self.writer.rotate()

    async def _durable(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_waiters())
        await waiter

    async def _flush_waiters(self) -> None:
        while self._waiters:
            batch, self._waiters = self._waiters, []
            try:
                await self.writer.drain()
            except Exception as exc:  # the flusher's top loop: every waiter gets the error
                for waiter in batch:
                    if not waiter.done():
                        waiter.set_exception(exc)
                continue
            for waiter in batch:
                if not waiter.done():
                    waiter.set_result(None)


@dataclass
class NodeParts:
    config: CrawlConfig
    node_id: str
    out_dir: Path
    clock: Clock
    resolver: Resolver
    http: HttpPort
    frontier: Frontier
    writer: WriterPort
    robots: RobotsGate
    scope: Scope
    stats: CrawlStats
    parser: ParsePool
    """HTML parsing with a deadline (:mod:`webgather.runtime.engine.parse_pool`)."""
    robots_store: RobotsStore
    """Every host's settled robots state, on disk (:mod:`webgather.runtime.engine.robots_store`)."""
    page_hooks: PageHooks | None = None
    """The crawl's ``on_page`` / ``on_link`` hooks and their items file (:mod:`webgather.runtime.engine.page_hooks`)."""
    render: RenderStage | None = None
    """Pages rendered in headless Chromium (``[render]``, :mod:`webgather.runtime.engine.render_stage`); None: none."""
    cookies: CrawlCookies | None = None
    """The crawl's cookie jar, the one ``http`` sends and fills (None with ``[fetch] cookies = false``)."""


@contextlib.asynccontextmanager
async def open_parts(
    config: CrawlConfig,
    out_dir: Path,
    *,
    node_id: str = "n0", clock: Clock | None = None,
    seeds: Sequence[str] = (),
    n_buckets: int = 4096,
    frontier_cls: type[Frontier] = Frontier, hooks: HookFunctions | None = None, epoch: float | None = None,
) -> AsyncIterator[NodeParts]:
    """Build every part of a node; close them all (flushing state) on the way out.

    ``n_buckets`` and ``frontier_cls`` are for cluster nodes (M of the crawl, and a
    frontier whose buckets follow the crawl's partition key). The node's threads stay
    on one CPU while it is open (``config.pin_cpu``: :mod:`webgather.runtime.engine.affinity`). ``hooks``: page hooks;
    ``epoch``: when the crawl started (its stats' intervals count from there; None: now)."""
    page_hooks = PageHooks.of(config, hooks, out_dir, node_id)  # first: a module that cannot be imported stops nothing built
    parser = ParsePool(config.parse, cpus := allowed_cpus())  # the mask before the pin: parsers, browser: every CPU
    # pinned before the writer thread starts (it inherits the mask); the node's records carry its id (logs)
    with pinned(config.pin_cpu), node_context(node_id):
        clock = clock or SystemClock()
        out_dir.mkdir(parents=True, exist_ok=True)
        resolver = Resolver.from_config(config.fetch, clock)
        frontier = frontier_cls.open(out_dir / "state", config.frontier, config.politeness, n_buckets=n_buckets,
                                     max_pages_per_host=config.scope.max_pages_per_host)
        writer, robots_store = ArchiveWriter.open(out_dir, node_id, config.store), RobotsStore.open(out_dir / "state")
        robots, scope = robots_gate(config), Scope(config.scope, seeds)
        stats = CrawlStats(started_at=clock.wall() if epoch is None else epoch, interval_s=config.cluster.interval_s)
        failed = False
        try:
            async with HttpClient(config.fetch, resolver, clock) as http, \
                    RenderStage.open(config.render, scope, robots, clock, cpus) as render:
                with _kept_cookies(config, out_dir) as jar:
                    yield NodeParts(config, node_id, out_dir, clock, resolver,
                                    http if jar is None else CookieHttp(http, jar), frontier, WriterPort(writer),
                                    robots, scope, stats, parser, robots_store, page_hooks, render, jar)
        except WriteFailed:
            failed = True
            raise
        finally:
            await _close(parser, writer, frontier, page_hooks, robots_store, after_failure=failed)


COOKIES_FILE = Path("state") / "cookies.json"
"""The node's cookie jar between runs (under its directory): a resumed crawl keeps its sessions."""


@contextlib.contextmanager
def _kept_cookies(config: CrawlConfig, out_dir: Path) -> Iterator[CrawlCookies | None]:
    """The crawl's cookie jar with what an earlier run kept (None with ``[fetch] cookies = false``),
    kept again for the next run on the way out; a failure to keep it is logged (it must not hide
    why the run ended)."""
    fetch = config.fetch
    if not fetch.cookies:
        yield None
        return
    jar = CrawlCookies(fetch.max_cookies_per_host, fetch.max_cookie_bytes_per_host)
    jar.load(out_dir / COOKIES_FILE)
    try:
        yield jar
    finally:
        try:
            (out_dir / COOKIES_FILE).parent.mkdir(parents=True, exist_ok=True)
            jar.save(out_dir / COOKIES_FILE)
        except (WriteFailed, OSError) as exc:
            _log.warning("cookies not kept for the next run: %s", exc)


async def _close(parser: ParsePool, writer: ArchiveWriter, frontier: Frontier, page_hooks: PageHooks | None,
                 robots_store: RobotsStore, *, after_failure: bool) -> None:
    """End the parser processes, drain and close the writer, then close (checkpoint) the
    frontier, each attempted.

    ``after_failure``: a failed write stopped the crawl, and that first failure
    (naming the file that could not be written) is the one reported; the same
    full disk failing the closing writes again is only logged."""
    try:
        try:
            try:
                if page_hooks is not None:  # Parquet items still in memory are written here
                    page_hooks.close()
            finally:
                await parser.close()
                await writer.drain()
        finally:
            try:
                writer.close()
            finally:  # after a failed write too: what was journaled is checkpointed
                try:
                    frontier.close()
                finally:
                    robots_store.close()
    except WriteFailed as exc:
        if not after_failure:
            raise
        _log.info("closing after a failed write: %s", exc)
