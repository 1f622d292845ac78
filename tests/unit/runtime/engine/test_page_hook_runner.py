"""The page-hook runner (runtime.engine.page_hooks.PageHooks): what a hook gives, and every way it can go wrong."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from webgather.config import CrawlConfig, HooksConfig, ScopeConfig
from webgather.errors import ConfigError, WriteFailed
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.runtime.engine.page_hooks import HOOK_ERROR, HookFunctions, Link, Page, PageHooks, hook_functions
from webgather.runtime.engine.pipeline import Extracted, HostFingerprints, RoutedUrls, extract
from webgather.scope import Scope
from webgather.urls import fingerprint

BASE = "http://a.test/dir/page"
PAGE = (b'<html><head><title> The  title </title></head><body><h1>Head</h1>'
        b'<a href="/x">x</a> <a href="http://b.test/y" rel="nofollow">y</a> <a href="/z">z</a></body></html>')
SCOPE = Scope(ScopeConfig(mode="seed-hosts"), [BASE])


def _page() -> tuple[CrawlItem, FetchResult, Extracted]:
    item = CrawlItem(BASE, fingerprint(BASE), depth=2)
    result = FetchResult(url=BASE, started_at=0.0, elapsed_s=0.01, status=200,
                         response_headers=(("Content-Type", "text/html; charset=utf-8"), ("X-A", "1")),
                         raw_body=PAGE, body=PAGE)
    extracted = extract(item, result, Decision(parse="page"), SCOPE, HostFingerprints(), RoutedUrls(), want_text=False)
    from webgather.parse.links import parse_page_tree

    extracted.page, extracted.tree = parse_page_tree(BASE, PAGE, "text/html", want_text=False)
    return item, result, extracted


def _apply(tmp_path: Path, on_page: Callable[[Page], Iterable[object] | None] | None = None,
           on_link: Callable[[str], bool] | None = None) -> tuple[Decision, str | None, Extracted, PageHooks]:
    hooks = PageHooks(HookFunctions(on_page, on_link), tmp_path)
    item, result, extracted = _page()
    try:
        decision, detail = hooks.apply(item, result, Decision(parse="page"), extracted, SCOPE)
    finally:
        hooks.close()
    return decision, detail, extracted, hooks


def _items(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "items.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_page_shows_what_was_fetched_and_parsed(tmp_path: Path) -> None:
    seen: list[Page] = []
    _apply(tmp_path, seen.append)
    page = seen[0]
    assert (page.url, page.status, page.depth, page.title) == (BASE, 200, 2, "The title")
    assert page.header("x-a") == "1" and ("X-A", "1") in page.headers and page.body == PAGE
    assert page.text == PAGE.decode() and page.base_url == BASE
    assert [link.url for link in page.links] == ["http://a.test/x", "http://b.test/y", "http://a.test/z"]
    assert page.tree is not None and page.tree.css_first("h1").text() == "Head"


def test_items_are_written_with_the_page_url_and_links_are_added_in_scope(tmp_path: Path) -> None:
    def hook(page: Page) -> Iterable[object]:
        yield {"n": 1, "title": page.title}
        yield {"page_url": "mine", "é": "ü"}
        yield Link("extra?q=1")  # relative to the page's base
        yield Link("http://c.test/off-scope")

    decision, detail, extracted, hooks = _apply(tmp_path, hook)
    assert decision.error is None and detail is None
    assert _items(tmp_path) == [{"page_url": BASE, "n": 1, "title": "The title"}, {"page_url": "mine", "é": "ü"}]
    added = [i for i in extracted.items if i.url == "http://a.test/dir/extra?q=1"]
    assert len(added) == 1 and added[0].depth == 3
    assert not any("c.test" in i.url for i in extracted.items)
    assert hooks.counts["items"] == 2 and hooks.counts["links_added"] == 1
    assert extracted.page is None and extracted.tree is None, "the tree is let go of once the hooks ran"


@pytest.mark.parametrize(("hook", "needle"), [
    (lambda page: 1 / 0, "on_page raised ZeroDivisionError"),
    (lambda page: ["a string"], "on_page yielded a str: yield dicts (items) or Link(url)"),
    (lambda page: [{"ok": 1}, {"bad": {1, 2}}], "not JSON"),
    (lambda page: [{"nan": float("nan")}], "not JSON"),
    (lambda page: [{"s": "\ud800"}], "not JSON"),
    (lambda page: [{"ok": 1}, Link("javascript:alert(1)")], "not an http(s) URL"),
    (lambda page: 42, "on_page raised TypeError"),
])
def test_a_bad_hook_is_a_hook_error_and_the_page_gives_nothing(tmp_path: Path, hook: Callable[[Page], object],
                                                               needle: str) -> None:
    before = {i.url for i in _page()[2].items}
    decision, detail, extracted, hooks = _apply(tmp_path, hook)  # type: ignore[arg-type]
    assert decision.error == HOOK_ERROR and detail is not None and needle in detail, detail
    assert _items(tmp_path) == [], "a failed page's items are all dropped"
    assert {i.url for i in extracted.items} == before, "its own links are still followed"
    assert hooks.counts["errors"] == 1


def test_on_link_drops_urls_and_one_that_raises_keeps_them(tmp_path: Path) -> None:
    decision, _, extracted, hooks = _apply(tmp_path, lambda page: [Link("/w")], lambda url: not url.endswith("/x"))
    assert decision.error is None
    assert sorted(i.url for i in extracted.items) == ["http://a.test/w", "http://a.test/z"]
    assert hooks.counts["links_dropped"] == 1

    def boom(url: str) -> bool:
        raise KeyError(url)

    decision, detail, extracted, _ = _apply(tmp_path, None, boom)
    assert decision.error == HOOK_ERROR and detail is not None and detail.startswith("on_link raised KeyError")
    assert sorted(i.url for i in extracted.items) == ["http://a.test/x", "http://a.test/z"]


def test_a_failed_item_write_is_write_failed_not_a_hook_error(tmp_path: Path) -> None:
    (tmp_path / "items.jsonl").mkdir()  # cannot be opened as a file
    with pytest.raises(WriteFailed, match="items file"):
        _apply(tmp_path, lambda page: [{"a": 1}])


def test_hooks_from_functions_or_a_module_not_both(tmp_path: Path) -> None:
    given = HookFunctions(on_link=lambda url: True)
    assert hook_functions(CrawlConfig(), given) is given
    assert hook_functions(CrawlConfig(), HookFunctions()) is None and hook_functions(CrawlConfig(), None) is None
    with pytest.raises(ConfigError, match="defines neither"):
        hook_functions(CrawlConfig(hooks=HooksConfig(module="json")), None)
    with pytest.raises(ConfigError, match="given twice"):
        hook_functions(CrawlConfig(hooks=HooksConfig(module="json")), given)
    assert not os.path.exists(tmp_path / "items.jsonl")
