"""The rendering stage of a node: pages a ``[render]`` rule matches are loaded in headless Chromium.

Between the fetch and the parse (:meth:`CrawlNode._handle`): an HTML page that is to be parsed, whose
URL a rule matches (:class:`~webgather.fetch.render_rules.RenderRules`), is rendered by the node's
browser (:mod:`webgather.fetch.render`) from the bytes already fetched; the parse then reads the
rendered DOM (so links a script inserts are found) and the archive keeps the DOM as a WARC
``conversion`` record beside the response. At most ``render.max_pages`` pages render at once, each
bounded by ``render.timeout_s``; a page that fails or times out keeps its fetched HTML (its links are
still followed) and its crawl-log line carries ``render_timeout`` or ``render_error``.

Scripts and XHR the page loads go through the node's HTTP client, and only to URLs the crawl's scope
admits on hosts whose robots.txt the node holds and allows (the same gate as a page fetch), at most
``render.max_subresources`` a page. They are not archived: the WARC keeps what the crawler fetched as
pages, and the rendered result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from webgather.clock import Clock
from webgather.config import RenderConfig
from webgather.errors import RenderError
from webgather.fetch.model import FetchResult
from webgather.fetch.render import Browser, Document, SubFetch, check_available
from webgather.fetch.render_rules import RenderRules
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.robots.gate import Allow, RobotsGate
from webgather.scope import Scope
from webgather.urls import canonicalize, host_key

__all__ = ["RenderStage", "Rendered"]

_log = logging.getLogger(__name__)


class HttpPort(Protocol):
    """The node's HTTP client as the run loop holds it (:class:`webgather.runtime.engine.parts.HttpPort`)."""

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult: ...


@dataclass(frozen=True, slots=True)
class Rendered:
    """What the parse and the archive get of one page."""

    result: FetchResult
    """The result to parse: the rendered DOM as its UTF-8 body, or the fetched result unchanged."""
    dom: bytes | None
    """The rendered DOM (archived as a ``conversion`` record), or None (not rendered)."""
    decision: Decision
    """The decision, with ``render_timeout``/``render_error`` when the page could not be rendered."""


class RenderStage:
    """Renders the pages its rules match; one browser, ``max_pages`` tabs at a time."""

    def __init__(self, config: RenderConfig, rules: RenderRules, browser: Browser, scope: Scope,
                 robots: RobotsGate, clock: Clock) -> None:
        self._config = config
        self._rules = rules
        self._browser = browser
        self._scope = scope
        self._robots = robots
        self._clock = clock
        self._slots = asyncio.Semaphore(config.max_pages)
        self.pages = 0
        """Pages rendered (successfully) so far."""

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, config: RenderConfig, scope: Scope, robots: RobotsGate, clock: Clock,
                   cpus: frozenset[int] | None = None) -> AsyncIterator[RenderStage | None]:
        """The stage with its browser running, or None when no rule asks for rendering (no browser needed).
        :class:`~webgather.errors.RenderUnavailable` if a rule is given and Playwright or the browser is missing.
        ``cpus``: where the browser runs (the node's CPUs before its pin, :class:`Browser`)."""
        rules = RenderRules.of(config)
        if not rules.active:
            yield None
            return
        check_available(config.browser_path)
        browser = Browser(config.browser_path, config.max_subresources, cpus)
        await browser.start()
        try:
            yield cls(config, rules, browser, scope, robots, clock)
        finally:
            await browser.close()

    def wants(self, item: CrawlItem, decision: Decision) -> bool:
        """The page is an HTML page to be parsed, and a rule matches its URL."""
        return decision.parse == "page" and decision.redirect_to is None and self._rules.matches(item.url)

    async def render(self, item: CrawlItem, result: FetchResult, decision: Decision, http: HttpPort) -> Rendered:
        """The page as the parse and the archive should see it (the fetched page when not wanted).
        ``http``: the client the node fetches with now (a cluster node's is fenced), for scripts and XHR."""
        if not self.wants(item, decision) or result.status is None:
            return Rendered(result, None, decision)
        document = Document(result.status, result.response_headers, result.body)
        async with self._slots:
            try:
                html = await self._browser.render(result.url, document, self._sub_fetch(item, http),
                                                  self._config.timeout_s)
            except RenderError as exc:
                _log.warning("%s not rendered: %s (%s)", item.url, exc.kind, exc)
                return Rendered(result, None, replace(decision, error=decision.error or exc.kind))
        self.pages += 1
        dom = html.encode("utf-8", "surrogateescape")
        headers = tuple((k, v) for k, v in result.response_headers if k.lower() != "content-type")
        as_parsed = replace(result, body=dom, response_headers=(*headers, ("Content-Type", "text/html; charset=utf-8")))
        return Rendered(as_parsed, dom, decision)

    def _sub_fetch(self, item: CrawlItem, http: HttpPort) -> SubFetch:
        async def fetch(url: str) -> Document | None:
            canonical = canonicalize(url)
            if canonical is None or self._scope.reject(canonical, item.depth) is not None:
                return None
            allowed = self._robots.peek(host_key(canonical), canonical, self._clock.monotonic())
            if not isinstance(allowed, Allow):
                return None
            got = await http.fetch(canonical)
            if got.status is None:
                return None
            return Document(got.status, got.response_headers, got.body)
        return fetch
