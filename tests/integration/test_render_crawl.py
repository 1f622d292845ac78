"""A crawl that renders script pages in headless Chromium fetches exactly the closure with rendering;
the same crawl without rendering fetches exactly the closure without (script-only links not followed).

The browser is Debian's chromium through Playwright (the ``render`` extra); both must be present, else
the tests skip saying which is missing. Everything runs on loopback: the synthetic web's server, and a
browser that resolves no name and fetches nothing itself (the server's request count proves it).
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path

import pytest

from webgather.config import CrawlConfig, RenderConfig
from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer
from webgather.urls import hostname

from node_crawl_helpers import crawl_config, fetched_urls, final_entries, write_resolve

CHROMIUM = "/usr/bin/chromium"

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) is not installed")
pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"no Chromium at {CHROMIUM}")


def script_web() -> WebModel:
    """Three hosts, half of whose content pages insert their <a href> links with a script; no sitemaps
    (they would list every page) and no faults, so that the closures differ only by rendering."""
    return WebModel(WebParams.for_tests(
        n_hosts=3, mean_pages_per_host=12.0, mean_out_degree=5.0, script_link_share=0.5, sitemap_share=0.0,
        faults=FaultRates.none(), robots_mix=(("allow", 1.0),)))


def render_rules(port: int) -> RenderConfig:
    """Render h0001 (by SURT prefix) and h0002 (by regex); h0003's pages are parsed as fetched."""
    return RenderConfig(include=(r"^http://h0002\.web\.test:",), include_surt=(f"http://(test,web,h0001,:{port})/",),
                        browser_path=CHROMIUM, timeout_s=30.0, max_pages=2)


async def crawl(model: WebModel, server: TestWebServer, out: Path, render: RenderConfig | None) -> CrawlConfig:
    base = crawl_config(crawl_config_for(model.params), out, write_resolve(server, out.parent))
    config = base if render is None else dataclasses.replace(base, render=render)
    summary = await run_crawl(config, [server.home_url(0)])
    assert summary["finished"] is True
    return config


async def test_rendered_and_plain_crawls_each_fetch_their_closure(tmp_path: Path) -> None:
    model = script_web()
    async with TestWebServer(model) as server:
        seeds = [server.home_url(0)]
        plain_config = await crawl(model, server, tmp_path / "plain", None)
        plain_requests = server.requests
        rendered_config = await crawl(model, server, tmp_path / "rendered", render_rules(server.port))
        rendered_requests = server.requests - plain_requests
        now = server.clock.wall()
        plain = crawl_outcomes(model, seeds, plain_config, now_s=now).fetched
        rendered = crawl_outcomes(model, seeds, rendered_config, now_s=now).fetched
    assert plain < rendered, "the web must have links that only rendering finds"
    for out, expected, requests in ((tmp_path / "plain", plain, plain_requests),
                                    (tmp_path / "rendered", rendered, rendered_requests)):
        fetched = fetched_urls(final_entries(out))
        assert set(fetched) == set(expected), out.name
        assert max(fetched.values()) == 1, "a URL was fetched twice"
        # one request per crawl-log line (pages and robots.txt): the browser asked the server for nothing
        assert requests == sum(1 for log in out.rglob("crawl.log.jsonl") for _ in read_crawl_log(log))
    check_conversions(tmp_path / "rendered", server.port)


def check_conversions(out: Path, port: int) -> None:
    """Every rendered page (200 HTML on h0001/h0002) has one conversion record, text/html, referring to
    its response record, whose DOM holds the script's links; other pages have none."""
    from warcio.archiveiterator import ArchiveIterator

    responses: dict[str, str] = {}
    conversions: list[tuple[str, str, str, bytes]] = []
    for path in sorted(out.rglob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response":
                    responses[uri] = record.rec_headers.get_header("WARC-Record-ID")
                elif record.rec_type == "conversion":
                    conversions.append((uri, record.rec_headers.get_header("WARC-Refers-To"),
                                        record.rec_headers.get_header("Content-Type"), record.content_stream().read()))
    pages = {e["url"] for e in final_entries(out)
             if e["status"] == 200 and e.get("content_type") == "text/html"
             and hostname(e["url"]) in ("h0001.web.test", "h0002.web.test")}
    assert Counter(uri for uri, *_ in conversions) == Counter(pages)
    for uri, refers_to, content_type, dom in conversions:
        assert refers_to == responses[uri]
        assert content_type.startswith("text/html")
        assert dom.startswith(b"<!DOCTYPE html>") and dom.rstrip().endswith(b"</html>")
    assert any(b">more 0</a>" in dom for *_, dom in conversions), "no script page was rendered"
    errors = [e for e in final_entries(out) if e.get("error")]
    assert errors == []
