"""The ``[hooks]`` section: ``module`` (the older top-level ``hooks`` still reads), ``items`` and its flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgather.cli import main
from webgather.config import CrawlConfig, HooksConfig, load, to_toml
from webgather.errors import ConfigError


def test_the_section_the_older_spelling_and_the_environment(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('[hooks]\nmodule = "json"\nitems = "out/items.parquet"\nitems_batch = 50\n')
    assert load(toml, {}).hooks == HooksConfig(module="json", items="out/items.parquet", items_batch=50)
    toml.write_text('hooks = "json"\n')  # what a file written before [hooks] existed says
    assert load(toml, {}).hooks.module == "json"
    assert load(None, {"WEBGATHER_HOOKS": "json", "WEBGATHER_HOOKS__ITEMS": "x.jsonl"}).hooks == \
        HooksConfig(module="json", items="x.jsonl")
    config = CrawlConfig(hooks=HooksConfig(module="json", items="i.parquet", items_flush_s=2.5))
    written = tmp_path / "w.toml"
    written.write_text(to_toml(config))
    assert load(written, {}).hooks == config.hooks


@pytest.mark.parametrize(("values", "needle"), [
    ({"hooks.items": "items.csv"}, "hooks.items must be a path ending in .jsonl or .parquet"),
    ({"hooks.items_batch": 0}, "hooks.items_batch must be >= 1"),
    ({"hooks.module": "not a module"}, "hooks.module must be a module's import path"),
])
def test_bad_settings(values: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load(None, {}, values)


def test_the_items_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "--items", "x.parquet"]) == 0
    assert "x.parquet" in capsys.readouterr().out
    assert main(["config", "show", "--items", "x.csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(set by --items)" in err, err
