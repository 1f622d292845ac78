"""The status page's server (``webgather status serve``): a thin aiohttp.web shell over the crawl's Redis.

Every request reads what ``webgather cluster status`` reads (live members'
heartbeat info, the bucket table, the counters: a few Redis commands) and
renders it with the pure :mod:`webgather.cluster.status_model` and
:mod:`webgather.cluster.status_html`; nothing is cached and nothing is written.
``/`` is the page, ``/status.json`` the same figures as JSON. While Redis does
not answer, both say so with HTTP 503 and one line (and one log warning per
outage), and the server keeps going.
"""

from __future__ import annotations

import logging
from types import TracebackType

from aiohttp import web

from webgather.cluster import definition
from webgather.cluster.mapping import MAX_BUCKETS
from webgather.cluster.redis import RedisBackend
from webgather.cluster.status_html import render_page
from webgather.cluster.status_model import ClusterStatus, build_status, status_record
from webgather.clock import Clock, SystemClock
from webgather.errors import ClusterError, ConfigError

__all__ = ["StatusReader", "StatusServer", "open_reader", "status_app"]

log = logging.getLogger(__name__)


class StatusReader:
    """Reads one crawl's status from its backend (the caller closes it with :meth:`aclose`)."""

    def __init__(self, backend: RedisBackend, crawl: str, clock: Clock | None = None) -> None:
        self.backend, self.crawl = backend, crawl
        self.clock = clock or SystemClock()
        self._failing = False

    async def read(self) -> ClusterStatus:
        """The current status; :class:`ClusterError` (one line) if the backend does not answer."""
        coordinator = self.backend.coordinator()
        try:
            members = await coordinator.members()
            table, counters = await coordinator.get_table(), await coordinator.counters()
        except ClusterError as exc:
            if not self._failing:
                log.warning("status of crawl %s: cannot read the crawl's Redis: %s", self.crawl, exc)
            self._failing = True
            raise
        if self._failing:
            log.warning("status of crawl %s: the crawl's Redis answers again", self.crawl)
            self._failing = False
        return build_status(self.crawl, members, table, counters, self.clock.wall())

    async def aclose(self) -> None:
        await self.backend.aclose()


async def open_reader(url: str, crawl: str) -> StatusReader:
    """A reader of crawl ``crawl`` at ``url``; :class:`ConfigError` if no crawl of that name was ever started."""
    backend = await RedisBackend.connect(url, crawl, MAX_BUCKETS)
    try:
        found = await definition.read(backend)
    except BaseException:
        await backend.aclose()
        raise
    if found is None:
        await backend.aclose()
        raise ConfigError(f"no crawl named {crawl!r} in that Redis (start one with webgather crawl --redis URL "
                          f"--crawl {crawl})")
    return StatusReader(backend, crawl)


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
