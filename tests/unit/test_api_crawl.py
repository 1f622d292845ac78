"""``webgather.Crawl``'s arguments: config as an object, a TOML path or None (+ WEBGATHER_*), and clear refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

import webgather
from webgather.config import CrawlConfig, HooksConfig


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


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"config": 42}, "config must be a CrawlConfig"),
    ({"on_page": "title"}, "on_page must be a function"),
    ({"config": CrawlConfig(hooks=HooksConfig(module="json")), "on_link": bool}, "hooks given twice"),
    ({"config": CrawlConfig(), "seeds": []}, "needs at least one seed"),
    ({"seeds": ["not a url"]}, "not a url"),
])
def test_bad_arguments_are_one_line_errors(tmp_path: Path, kwargs: dict[str, object], needle: str) -> None:
    args = {"seeds": ["http://a.test/"], "out": tmp_path / "o", **kwargs}
    with pytest.raises(webgather.WebgatherError, match=needle):
        webgather.Crawl(**args)  # type: ignore[arg-type]
    assert not (tmp_path / "o").exists()
