"""Page hooks (``on_page`` / ``on_link``) and the Python API (``webgather.Crawl``) against the synthetic web."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import webgather
from webgather.config import CrawlConfig
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer
from webgather.urls import fingerprint

from node_crawl_helpers import crawl_config, fetched_urls, final_entries, write_resolve

HTML = ("text/html", "application/xhtml+xml")


@pytest.fixture(scope="module")
def model() -> WebModel:
    return WebModel(WebParams.for_tests())


def _config(model: WebModel, server: TestWebServer, tmp_path: Path) -> CrawlConfig:
    return crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path))


def _items(out: Path) -> list[dict[str, Any]]:
    path = out / "items.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _parsed_pages(entries: list[dict[str, Any]]) -> set[str]:
    """Pages the crawl parsed as HTML: final page entries, 2xx, no error, an HTML type."""
    return {e["url"] for e in entries if e["kind"] == "page" and e["error"] is None
            and 200 <= (e["status"] or 0) < 300 and e.get("content_type") in HTML}


def titles(page: webgather.Page) -> Iterator[dict[str, Any]]:
    heading = page.tree.css_first("h1") if page.tree is not None else None
    yield {"title": page.title, "h1": heading.text(strip=True) if heading is not None else None,
           "status": page.status, "links": len(page.links), "chars": len(page.text)}


async def test_items_one_per_parsed_html_page_and_the_crawl_unchanged(model: WebModel, tmp_path: Path) -> None:
    async with TestWebServer(model) as server:
        config = _config(model, server, tmp_path)
        seeds = [server.home_url(0)]
        summary = await webgather.Crawl(seeds, config=config, on_page=titles).run_async()
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
    entries = final_entries(tmp_path / "out")
    assert summary.finished and set(fetched_urls(entries)) == set(expected.fetched)
    items = _items(tmp_path / "out")
    per_page = Counter(i["page_url"] for i in items)
    assert set(per_page) == _parsed_pages(entries) and max(per_page.values()) == 1
    assert summary.items == len(items) > 50 and summary.items_file == tmp_path / "out" / "items.jsonl"
    with_tree = [i for i in items if i["h1"] is not None]
    assert len(with_tree) > len(items) * 0.9, "inline-parsed pages hand the hook their tree"
    assert all(i["h1"] == i["title"] for i in with_tree)
    assert summary.raw["hooks"]["pages_without_tree"] == len(items) - len(with_tree)
    assert "hook_error" not in summary.errors


async def test_a_hook_that_raises_is_a_recorded_hook_error(model: WebModel, tmp_path: Path) -> None:
    def flaky(page: webgather.Page) -> Iterator[dict[str, Any]]:
        if fingerprint(page.url) % 3 == 0:
            raise ValueError(f"no luck with {page.url}")
        yield {"ok": True}

    async with TestWebServer(model) as server:
        config = _config(model, server, tmp_path)
        seeds = [server.home_url(0)]
        summary = await webgather.Crawl(seeds, config=config, on_page=flaky).run_async()
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
    entries = final_entries(tmp_path / "out")
    assert summary.finished and set(fetched_urls(entries)) == set(expected.fetched), "links still followed"
    failed = {e["url"]: e for e in entries if e["error"] == "hook_error"}
    unlucky = {u for u in _parsed_pages(entries) | set(failed) if fingerprint(u) % 3 == 0}
    assert failed and set(failed) == unlucky
    assert all("ValueError: no luck with" in e["detail"] for e in failed.values())
    assert {i["page_url"] for i in _items(tmp_path / "out")} == _parsed_pages(entries)
    assert summary.errors["hook_error"] == len(failed) == summary.raw["hooks"]["errors"]


async def test_a_yielded_link_is_followed_within_scope(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests(n_hosts=3))

    async with TestWebServer(model) as server:
        home = server.home_url(0)
        hidden, outside = server.url(0, "/hidden-by-hook"), "http://elsewhere.example/x"

        def more(page: webgather.Page) -> Iterator[webgather.Link]:
            if page.url == home:
                yield webgather.Link("/hidden-by-hook")  # relative: resolved against the page
                yield webgather.Link(outside)

        summary = await webgather.Crawl([home], config=_config(model, server, tmp_path), on_page=more).run_async()
    urls = {e["url"]: e for e in final_entries(tmp_path / "out")}
    assert summary.finished and hidden in urls and urls[hidden]["status"] == 404
    assert urls[hidden]["depth"] == 1
    assert outside not in urls, "a hook's link passes the same scope check"
    assert summary.raw["hooks"]["links_added"] == 1


async def test_on_link_drops_a_prefix_and_it_is_never_fetched(model: WebModel, tmp_path: Path) -> None:
    async with TestWebServer(model) as server:
        config = _config(model, server, tmp_path)
        seeds = [server.home_url(0)]
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
        prefix = server.url(3, "/")
        assert any(u.startswith(prefix) for u in expected.fetched), "the prefix is crawled without the filter"
        summary = await webgather.Crawl(seeds, config=config,
                                        on_link=lambda url: not url.startswith(prefix)).run_async()
        requested = {r.host for r in server.records}
    fetched = fetched_urls(final_entries(tmp_path / "out"))
    assert summary.finished and fetched and not any(u.startswith(prefix) for u in fetched)
    assert prefix.split("/")[2] not in requested, "not even its robots.txt"
    assert summary.raw["hooks"]["links_dropped"] > 0 and summary.items == 0


async def test_pages_parsed_in_a_parser_process_come_without_a_tree(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests(n_hosts=2))
    async with TestWebServer(model) as server:
        base = _config(model, server, tmp_path)
        config = dataclasses.replace(base, parse=dataclasses.replace(base.parse, inline_max_tags=0))  # all to the pool
        summary = await webgather.Crawl([server.home_url(0)], config=config, on_page=titles).run_async()
    items = _items(tmp_path / "out")
    assert summary.finished and len(items) > 5
    assert all(i["h1"] is None and i["title"] and i["chars"] > 0 for i in items)
    assert summary.raw["hooks"]["pages_without_tree"] == len(items)
