"""The render stage with a real headless Chromium: a hung page ends at timeout_s as ``render_timeout``;
scripts load only through the crawler (its scope and robots gate), other requests are aborted; a
missing Playwright or browser is a one-line error only when a rule asks for rendering.

The browser resolves no host name and fetches nothing itself: here no server exists at all, the
crawler's HTTP client is a fake that serves from memory, and host names are ``*.test``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from webgather.clock import SystemClock
from webgather.config import RenderConfig, ScopeConfig
from webgather.errors import RenderUnavailable
from webgather.fetch.model import FetchResult
from webgather.fetch.render import check_available
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.robots.gate import Allow, Deny
from webgather.robots.parse import ALLOW_ALL
from webgather.runtime.engine.render_stage import RenderStage
from webgather.scope import Scope
from webgather.urls import fingerprint

CHROMIUM = "/usr/bin/chromium"
HAS_PLAYWRIGHT = subprocess.run([sys.executable, "-c", "import playwright.async_api"]).returncode == 0
needs_browser = pytest.mark.skipif(not (HAS_PLAYWRIGHT and os.access(CHROMIUM, os.X_OK)),
                                   reason=f"Playwright (render extra) or {CHROMIUM} missing")
PAGE = "http://a.test/page"


@dataclass
class FakeHttp:
    """The crawler's client, serving scripts from memory; records every URL it was asked for."""

    bodies: dict[str, bytes]
    asked: list[str] = field(default_factory=list)

    async def fetch(self, url: str, *, headers: object = None) -> FetchResult:
        self.asked.append(url)
        body = self.bodies.get(url)
        if body is None:
            return FetchResult(url=url, status=404, started_at=time.time(), elapsed_s=0.0)
        return FetchResult(url=url, status=200, response_headers=(("Content-Type", "text/javascript"),),
                           body=body, raw_body=body, started_at=time.time(), elapsed_s=0.0)


class HostsGate:
    """A robots gate whose answer is known for a.test (allowed) and c.test (denied) only."""

    def peek(self, host: str, url: str, now: float) -> object:
        if host == "a.test":
            return Allow(ALLOW_ALL)
        return Deny("robots") if host == "c.test" else None


def html_result(body: bytes) -> FetchResult:
    return FetchResult(url=PAGE, status=200, response_headers=(("Content-Type", "text/html"),), body=body,
                       raw_body=body, started_at=time.time(), elapsed_s=0.0)


def stage_config(**overrides: object) -> RenderConfig:
    values: dict[str, object] = dict(include=(r"^http://a\.test/",), browser_path=CHROMIUM, timeout_s=10.0)
    values.update(overrides)
    return RenderConfig(**values)  # type: ignore[arg-type]


def item() -> CrawlItem:
    return CrawlItem(PAGE, fingerprint(PAGE))


@needs_browser
async def test_a_hung_page_ends_at_timeout_s_as_render_timeout() -> None:
    scope = Scope(ScopeConfig(), [PAGE])
    result = html_result(b'<html><body><a href="/static">s</a><script>while (true) {}</script></body></html>')
    async with RenderStage.open(stage_config(timeout_s=1.5), scope, HostsGate(), SystemClock()) as stage:  # type: ignore[arg-type]
        assert stage is not None
        started = time.monotonic()
        rendered = await stage.render(item(), result, Decision(parse="page"), FakeHttp({}))
        took_s = time.monotonic() - started
        assert rendered.decision.error == "render_timeout"
        assert rendered.dom is None and rendered.result is result  # the fetched HTML is parsed instead
        assert took_s < 1.5 + 6.0
        # the browser is still usable after a hung page
        ok = await stage.render(item(), html_result(b"<p>fine</p>"), Decision(parse="page"), FakeHttp({}))
        assert ok.decision.error is None and ok.dom is not None and b"<p>fine</p>" in ok.dom


@needs_browser
async def test_scripts_load_through_the_crawler_only_where_scope_and_robots_allow() -> None:
    insert = (b"var a=document.createElement('a');a.href='http://a.test/from-script';a.textContent='js';"
              b"document.body.appendChild(a);")
    http = FakeHttp({"http://a.test/app.js": insert, "http://c.test/x.js": insert.replace(b"from-script", b"c"),
                     "http://b.test/x.js": insert.replace(b"from-script", b"b")})
    page = (b'<html><body><img src="http://a.test/i.png"><script src="http://a.test/app.js"></script>'
            b'<script src="http://c.test/x.js"></script><script src="http://b.test/x.js"></script>'
            b'<script src="http://off.test/x.js"></script></body></html>')
    scope = Scope(ScopeConfig(), [PAGE, "http://b.test/", "http://c.test/"])  # off.test is off scope
    async with RenderStage.open(stage_config(), scope, HostsGate(), SystemClock()) as stage:  # type: ignore[arg-type]
        assert stage is not None
        rendered = await stage.render(item(), html_result(page), Decision(parse="page"), http)
    assert rendered.decision.error is None and rendered.dom is not None
    assert b'<a href="http://a.test/from-script">js</a>' in rendered.dom
    assert rendered.result.body == rendered.dom
    assert rendered.result.header("Content-Type") == "text/html; charset=utf-8"
    # a.test's script went through the crawler; c.test (robots denies), b.test (robots not known),
    # off.test (off scope) and the image were never requested; the page itself was not fetched again
    assert http.asked == ["http://a.test/app.js"]


@needs_browser
async def test_pages_no_rule_matches_are_not_rendered() -> None:
    scope = Scope(ScopeConfig(), [PAGE])
    result = FetchResult(url="http://b.test/", status=200, body=b"<p>x</p>", raw_body=b"<p>x</p>",
                         started_at=time.time(), elapsed_s=0.0)
    async with RenderStage.open(stage_config(), scope, HostsGate(), SystemClock()) as stage:  # type: ignore[arg-type]
        assert stage is not None
        other = CrawlItem("http://b.test/", fingerprint("http://b.test/"))
        kept = await stage.render(other, result, Decision(parse="page"), FakeHttp({}))
        sitemap = await stage.render(item(), html_result(b"<p>x</p>"), Decision(parse="sitemap"), FakeHttp({}))
    assert kept.result is result and kept.dom is None
    assert sitemap.dom is None


async def test_no_rule_needs_no_browser() -> None:
    scope = Scope(ScopeConfig(), [PAGE])
    async with RenderStage.open(RenderConfig(browser_path="/nonexistent/chromium"), scope, HostsGate(),  # type: ignore[arg-type]
                                SystemClock()) as stage:
        assert stage is None


def test_a_missing_browser_or_playwright_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(RenderUnavailable, match="is not an executable Chromium"):
        check_available(str(tmp_path / "chromium"))
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)  # import fails as if not installed
    with pytest.raises(RenderUnavailable, match=r"pip install 'webgather\[render\]'"):
        check_available(CHROMIUM)


def test_the_crawl_command_refuses_a_render_rule_without_a_browser(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "webgather", "crawl", "http://a.test/", "--out", "out",
                           "--no-progress", "--render", "a[.]test"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "WEBGATHER_RENDER__BROWSER_PATH": str(tmp_path / "none")})
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "render.browser_path" in done.stderr
    assert not (tmp_path / "out").exists()


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # the process ended meanwhile
                continue
            parent = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@needs_browser
async def test_the_browser_runs_on_the_cpus_the_node_had_before_its_pin() -> None:
    from webgather.fetch.render import Browser

    allowed = frozenset(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU: nothing to unpin")
    os.sched_setaffinity(0, {min(allowed)})  # as a pinned node's loop thread
    browser = Browser(CHROMIUM, 4, allowed)
    try:
        await browser.start()
        assert os.sched_getaffinity(0) == {min(allowed)}  # the thread itself stays pinned
        masks = {}
        for pid in descendants(os.getpid()):
            try:
                masks[pid] = frozenset(os.sched_getaffinity(pid))
            except OSError:
                continue
        assert masks and all(mask == allowed for mask in masks.values()), masks
    finally:
        os.sched_setaffinity(0, allowed)
        await browser.close()
