"""The browser shell: one headless Chromium per node, driven by Playwright's async API.

Playwright is optional (the ``render`` extra) and imported only here, only when a ``[render]`` rule
asks for it: :func:`check_available` turns its absence, or a missing browser, into one
:class:`~webgather.errors.RenderUnavailable` line. The browser is Debian's ``chromium``
(``render.browser_path``); nothing is ever downloaded.

The browser never reaches the network by itself. Every request of a page is routed through
:meth:`Browser.render`'s handler (:func:`webgather.fetch.render_rules.request_action`): the page's
document is fulfilled with the bytes the crawler already fetched, scripts and XHR go through the
caller's ``fetch_sub`` (the crawler's HTTP client), the rest is aborted. As a second wall,
``--host-resolver-rules`` maps every host name to nothing (no DNS from the browser, ever) and
WebSockets are closed before they connect. Each page gets a fresh browser context (no cookies or
storage shared between pages) with service workers blocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webgather.errors import RenderError, RenderTimeout, RenderUnavailable
from webgather.fetch.render_rules import request_action

if TYPE_CHECKING:
    from playwright.async_api import Browser as PwBrowser
    from playwright.async_api import Page, Playwright, Request, Route

__all__ = ["Browser", "Document", "SubFetch", "check_available"]

_log = logging.getLogger(__name__)

CHROMIUM_ARGS = (
    "--host-resolver-rules=MAP * ~NOTFOUND",  # the browser resolves nothing: no real DNS, whatever a page does
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
)
_DROP_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection"})
"""Hop-by-hop and framing fields: the browser gets the decoded body, not the wire's framing."""
_CLOSE_S = 5.0
"""Bound on closing a page's context after it timed out (its renderer may be spinning)."""


@dataclass(frozen=True, slots=True)
class Document:
    """A response handed to the browser: status, headers as received, the decoded body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


SubFetch = Callable[[str], Awaitable[Document | None]]
"""Fetch a sub-resource through the crawler (None: not allowed or failed: the request is aborted)."""


def check_available(browser_path: str) -> None:
    """:class:`RenderUnavailable` unless Playwright imports and ``browser_path`` is an executable."""
    try:
        import playwright.async_api  # noqa: F401  (the optional extra)
    except ImportError:
        raise RenderUnavailable("[render] rules need Playwright: pip install 'webgather[render]'") from None
    if not (os.path.isfile(browser_path) and os.access(browser_path, os.X_OK)):
        raise RenderUnavailable(f"render.browser_path {browser_path!r} is not an executable Chromium "
                                "(Debian: apt-get install chromium)")


def _browser_headers(headers: tuple[tuple[str, str], ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers:
        if name.lower() not in _DROP_HEADERS:
            out[name] = f"{out[name]}, {value}" if name in out else value
    return out


class Browser:
    """One Chromium, launched by :meth:`start`, rendering pages on demand until :meth:`close`."""

    def __init__(self, browser_path: str, max_subresources: int, cpus: frozenset[int] | None = None) -> None:
        """``cpus``: the CPUs the browser's processes may use (the node's mask before it pinned itself to
        one: rendering on the node's own CPU would slow both), None: as the caller runs."""
        self._path = browser_path
        self._max_subresources = max_subresources
        self._cpus = cpus
        self._playwright: Playwright | None = None
        self._browser: PwBrowser | None = None

    async def start(self) -> None:
        check_available(self._path)
        from playwright.async_api import Error, async_playwright

        with _affinity(self._cpus):  # the driver and the browser it starts inherit this thread's CPU mask
            self._playwright = await async_playwright().start()
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self._path, headless=True, args=list(CHROMIUM_ARGS))
            except Error as exc:
                await self._playwright.stop()
                self._playwright = None
                raise RenderUnavailable(f"cannot start {self._path}: {str(exc).splitlines()[0]}") from None

    async def close(self) -> None:
        if self._browser is not None:
            with contextlib.suppress(Exception):  # closing what may already be gone: nothing to report
                await self._browser.close()
            self._browser = None
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None

    async def render(self, url: str, document: Document, fetch_sub: SubFetch, timeout_s: float) -> str:
        """The DOM of ``url`` (serialized HTML) once loaded from ``document``; :class:`RenderTimeout`
        after ``timeout_s``, :class:`RenderError` if the browser fails."""
        from playwright.async_api import Error

        if self._browser is None:
            raise RenderError("the browser is not running")
        context = await self._browser.new_context(service_workers="block")
        try:
            page = await context.new_page()
            await context.route_web_socket("**/*", lambda ws: ws.close())  # never connected to a server
            await page.route("**/*", _Router(page, document, fetch_sub, self._max_subresources).handle)
            return await asyncio.wait_for(_load(page, url, timeout_s), timeout_s)
        except (TimeoutError, asyncio.TimeoutError):
            raise RenderTimeout(f"not rendered within {timeout_s:g} s") from None
        except Error as exc:
            if "Timeout" in type(exc).__name__:
                raise RenderTimeout(f"not rendered within {timeout_s:g} s") from None
            raise RenderError(str(exc).splitlines()[0][:200]) from None
        finally:
            with contextlib.suppress(Exception, asyncio.TimeoutError):
                await asyncio.wait_for(context.close(), _CLOSE_S)


@contextlib.contextmanager
def _affinity(cpus: frozenset[int] | None) -> Iterator[None]:
    """This thread on ``cpus`` for the block (None, or no affinity on this OS: unchanged)."""
    if cpus is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


async def _load(page: Page, url: str, timeout_s: float) -> str:
    timeout_ms = timeout_s * 1000.0
    await page.goto(url, wait_until="load", timeout=timeout_ms)
    return await page.content()


class _Router:
    """The route handler of one page: every request the page makes comes here."""

    def __init__(self, page: Page, document: Document, fetch_sub: SubFetch, max_subresources: int) -> None:
        self._page = page
        self._document = document
        self._fetch_sub = fetch_sub
        self._max = max_subresources
        self._served = False
        self._used = 0

    async def handle(self, route: Route, request: Request) -> None:
        from playwright.async_api import Error

        try:
            await self._handle(route, request)
        except Error as exc:  # the page closed (timed out) while the request was answered: nothing to do
            _log.debug("render: request %s not answered: %s", request.url, str(exc).splitlines()[0])

    async def _handle(self, route: Route, request: Request) -> None:
        main = request.is_navigation_request() and request.frame == self._page.main_frame
        action = request_action(request.resource_type, main_frame_navigation=main, document_served=self._served,
                                subresources_used=self._used, max_subresources=self._max)
        if action == "document":
            self._served = True
            await _fulfill(route, self._document)
        elif action == "fetch":
            self._used += 1
            got = await self._fetch_sub(request.url)
            await (_fulfill(route, got) if got is not None else route.abort("blockedbyclient"))
        else:
            await route.abort("blockedbyclient")


async def _fulfill(route: Route, document: Document) -> None:
    await route.fulfill(status=document.status, headers=_browser_headers(document.headers), body=document.body)
