"""``webgather.Crawl``'s arguments: config as an object, a TOML path or None (+ WEBGATHER_*), and clear refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import webgather
from webgather.config import CrawlConfig, HooksConfig

import items_hook_module


def _closure() -> object:
    def hook(page: object) -> list[object]:
        return []

    return hook


class _Sink:
    def write(self, item: dict[str, object]) -> None:
        pass

    def close(self) -> None:
        pass


def test_config_object_path_or_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    crawl = webgather.Crawl("http://a.test/", out=tmp_path / "o", config=CrawlConfig(max_pages=3))
    assert (crawl.config.out_dir, crawl.config.max_pages, crawl.seeds) == (str(tmp_path / "o"), 3, ["http://a.test/"])
    toml = tmp_path / "c.toml"
    toml.write_text('out_dir = "from-file"\nmax_pages = 4\n[fetch]\nconcurrency = 9\n')
    monkeypatch.setenv("WEBGATHER_MAX_PAGES", "5")
    crawl = webgather.Crawl(["http://a.test/", "http://localhost:8/"], config=str(toml))
    assert (crawl.config.out_dir, crawl.config.max_pages, crawl.config.fetch.concurrency) == ("from-file", 5, 9)
    assert crawl.hooks is None and len(crawl.seeds) == 2
    assert webgather.Crawl("http://a.test/", on_link=bool).hooks is not None


def test_workers_take_the_hooks_by_import_path(tmp_path: Path) -> None:
    crawl = webgather.Crawl("http://a.test/", out=tmp_path / "o", on_page=items_hook_module.on_page, workers=2,
                            items="i.parquet")
    assert (crawl.config.hooks.module, crawl.config.hooks.items, crawl.hooks) == ("items_hook_module", "i.parquet", None)
    crawl = webgather.Crawl("http://a.test/", out=tmp_path / "o", hooks="items_hook_module", items=_Sink())
    assert crawl.config.hooks.module == "items_hook_module" and crawl.hooks is not None and crawl.hooks.on_page is None


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"config": 42}, "config must be a CrawlConfig"),
    ({"on_page": "title"}, "on_page must be a function"),
    ({"config": CrawlConfig(hooks=HooksConfig(module="json")), "on_link": bool}, "hooks given twice"),
    ({"config": CrawlConfig(), "seeds": []}, "needs at least one seed"),
    ({"seeds": ["not a url"]}, "not a url"),
    ({"on_page": lambda page: [], "workers": 2}, r"node processes import their hooks, and '<lambda>' of test_api_crawl cannot be imported"),
    ({"on_page": _closure(), "redis": "redis://127.0.0.1:1/0", "crawl_id": "c"}, r"'_closure.<locals>.hook' of test_api_crawl cannot be imported"),
    ({"on_link": items_hook_module.on_page, "workers": 2}, "node processes load items_hook_module's on_page and on_link"),
    ({"on_page": json.loads, "workers": 2}, "hooks module 'json' defines neither on_page nor on_link"),
    ({"hooks": "items_hook_module", "items": _Sink(), "workers": 2}, "an object cannot reach worker processes"),
    ({"items": "x.parquet"}, "items given, but no hooks to make them"),
    ({"on_page": print, "items": "x.csv"}, "hooks.items must be a path ending in .jsonl or .parquet"),
    ({"on_page": print, "items": 42}, "items must be a .jsonl or .parquet path or an object"),
    ({"redis": "redis://127.0.0.1:1/0"}, "redis needs crawl_id"),
    ({"crawl_id": "c"}, "give redis= too"),
    ({"workers": 0}, "workers must be a whole number >= 1"),
    ({"on_page": print, "hooks": "items_hook_module"}, "hooks given twice"),
])
def test_bad_arguments_are_one_line_errors(tmp_path: Path, kwargs: dict[str, object], needle: str) -> None:
    args = {"seeds": ["http://a.test/"], "out": tmp_path / "o", **kwargs}
    with pytest.raises(webgather.WebgatherError, match=needle):
        webgather.Crawl(**args)  # type: ignore[arg-type]
    assert not (tmp_path / "o").exists()
