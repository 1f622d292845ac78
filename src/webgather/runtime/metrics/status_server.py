"""The status page's server (``webgather status serve``): a thin aiohttp.web shell over the crawl's Redis.

Every request reads what ``webgather cluster status`` reads (live members'
heartbeat info, the bucket table, the counters: a few Redis commands) and
renders it with the pure :mod:`webgather.cluster.status_model` and
:mod:`webgather.cluster.status_html`; nothing is cached and nothing is written.
``/`` is the page, ``/status.json`` the same figures as JSON. While Redis does
not answer, both say so with HTTP 503 and one line (and one log warning per
outage), and the server keeps going.

A crawl that has ended keeps no live figures: a ``--workers`` crawl stops its
embedded Redis, and every node's heartbeat expires. Given the crawl's
directory (``crawl_dir``; for an embedded Redis on ``unix://DIR/redis/redis.sock``
it is DIR), the page then shows the crawl's last state from the summaries it
wrote (:mod:`webgather.cluster.status_final`): when Redis does not answer and
the summary was written after the crawl was last seen running, or when the
crawl is finished and no node is alive.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

from aiohttp import web

from webgather.cluster import definition
from webgather.cluster.mapping import MAX_BUCKETS
from webgather.cluster.redis import RedisBackend
from webgather.cluster.status_final import final_status
from webgather.cluster.status_html import render_page
from webgather.cluster.status_model import ClusterStatus, build_status, status_record
from webgather.clock import Clock, SystemClock
from webgather.errors import ClusterError, ConfigError, StoreError
from webgather.store.summary import SUMMARY_NAME, read_summary

__all__ = ["StatusReader", "StatusServer", "embedded_crawl_dir", "open_reader", "status_app"]

log = logging.getLogger(__name__)


class StatusReader:
    """Reads one crawl's status from its backend (the caller closes it with :meth:`aclose`); with ``crawl_dir``,
    an ended crawl's last state from its summaries (module docstring). ``backend`` None: the crawl's Redis had
    already stopped when the reader opened, so only the summaries are read."""

    def __init__(self, backend: RedisBackend | None, crawl: str, clock: Clock | None = None,
                 crawl_dir: Path | None = None) -> None:
        self.backend, self.crawl, self.crawl_dir = backend, crawl, crawl_dir
        self.clock = clock or SystemClock()
        self._failing = False
        self._live_at = 0.0
        """Wall time the crawl was last seen running (a summary older than that is a previous run's)."""

    async def read(self) -> ClusterStatus:
        """The current status; :class:`ClusterError` (one line) if the backend does not answer (and no summary
        written since the crawl was last seen running stands in)."""
        if self.backend is None:
            return self._final_or(ClusterError(f"the crawl's Redis had stopped and {self._summary_path()} is gone"))
        coordinator = self.backend.coordinator()
        try:
            members = await coordinator.members()
            table, counters = await coordinator.get_table(), await coordinator.counters()
        except ClusterError as exc:
            if not self._failing:
                log.warning("status of crawl %s: cannot read the crawl's Redis: %s", self.crawl, exc)
            self._failing = True
            return self._final_or(exc)
        if self._failing:
            log.warning("status of crawl %s: the crawl's Redis answers again", self.crawl)
            self._failing = False
        status = build_status(self.crawl, members, table, counters, self.clock.wall())
        if not status.finished or any(n.alive for n in status.nodes):
            self._live_at = status.now
            return status
        return self._final() or status

    def _final_or(self, error: ClusterError) -> ClusterStatus:
        final = self._final()
        if final is None:
            raise error
        return final

    def _final(self) -> ClusterStatus | None:
        """The last state from the crawl directory's summaries, if one was written since the crawl ran."""
        path = self._summary_path()
        if path is None:
            return None
        try:
            if path.stat().st_mtime < self._live_at:
                return None
            merged = read_summary(path.parent)
        except (OSError, StoreError):
            return None
        nodes = {}
        for node_dir in sorted(path.parent.glob("nodes/*")):
            try:
                nodes[node_dir.name] = read_summary(node_dir)
            except StoreError:
                continue
        return final_status(self.crawl, merged, nodes, self.clock.wall(), str(path))

    def _summary_path(self) -> Path | None:
        return None if self.crawl_dir is None else self.crawl_dir / SUMMARY_NAME

    async def aclose(self) -> None:
        if self.backend is not None:
            await self.backend.aclose()


def embedded_crawl_dir(url: str) -> Path | None:
    """DIR of a ``--workers`` crawl's embedded Redis socket ``unix://DIR/redis/redis.sock``; else None."""
    parts = urlsplit(url)
    if parts.scheme != "unix":
        return None
    socket_path = Path(parts.path or parts.netloc)
    if socket_path.name != "redis.sock" or socket_path.parent.name != "redis":
        return None
    return socket_path.parent.parent


async def open_reader(url: str, crawl: str, crawl_dir: Path | None = None) -> StatusReader:
    """A reader of crawl ``crawl`` at ``url``; :class:`ConfigError` if no crawl of that name was ever started.
    ``crawl_dir`` (default: the directory of an embedded Redis's socket): where the ended crawl's summaries are;
    a Redis that does not answer while a summary is there opens a reader of the summaries alone."""
    crawl_dir = crawl_dir if crawl_dir is not None else embedded_crawl_dir(url)
    try:
        backend = await RedisBackend.connect(url, crawl, MAX_BUCKETS)
    except ClusterError:
        if crawl_dir is None or not (crawl_dir / SUMMARY_NAME).is_file():
            raise
        log.warning("status of crawl %s: its Redis does not answer; showing its last state from %s",
                    crawl, crawl_dir / SUMMARY_NAME)
        return StatusReader(None, crawl, crawl_dir=crawl_dir)
    try:
        found = await definition.read(backend)
    except BaseException:
        await backend.aclose()
        raise
    if found is None:
        await backend.aclose()
        raise ConfigError(f"no crawl named {crawl!r} in that Redis (start one with webgather crawl --redis URL "
                          f"--crawl {crawl})")
    return StatusReader(backend, crawl, crawl_dir=crawl_dir)


def status_app(reader: StatusReader, refresh_s: float) -> web.Application:
    """``/``: the page; ``/status.json``: its figures."""

    async def page(_request: web.Request) -> web.Response:
        try:
            status = await reader.read()
        except ClusterError as exc:
            return web.Response(status=503, text=f"crawl {reader.crawl}: {exc}\n")
        return web.Response(text=render_page(status, refresh_s), content_type="text/html")

    async def as_json(_request: web.Request) -> web.Response:
        try:
            status = await reader.read()
        except ClusterError as exc:
            return web.json_response({"crawl": reader.crawl, "error": str(exc)}, status=503)
        return web.json_response(status_record(status))

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/status.json", as_json)
    return app


class StatusServer:
    """Serves :func:`status_app` on ``host:port`` (port 0: a free one) while the ``async with`` lasts."""

    def __init__(self, reader: StatusReader, host: str, port: int, refresh_s: float) -> None:
        self.reader, self.host, self.port, self.refresh_s = reader, host, port, refresh_s
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def __aenter__(self) -> StatusServer:
        runner = web.AppRunner(status_app(self.reader, self.refresh_s), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ConfigError(f"cannot serve the status page on {self.host}:{self.port}: "
                              f"{exc.strerror or exc}") from None
        self._runner = runner
        self.port = int(runner.addresses[0][1])  # the port bound (port 0 asks for a free one)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
