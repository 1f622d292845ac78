"""``webgather config show``: every setting's value, source and doc; docs/config.md is its --markdown."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgather.cli import main
from webgather.commands.config import markdown
from webgather.config import CrawlConfig
from webgather.config.reference import settings

ROOT = Path(__file__).resolve().parents[2]


def _rows(text: str) -> dict[str, str]:
    """Setting -> its line (the first column is the setting)."""
    lines = text.splitlines()
    assert lines[0].split() == ["setting", "value", "source", "doc"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert len(rows) == len(lines) - 1
    return rows


def test_every_setting_shows_its_value_source_and_doc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "crawl.toml"
    toml.write_text("max_pages = 50\n[fetch]\nconcurrency = 8\n[scope]\nmax_depth = 2\n")
    monkeypatch.setenv("WEBGATHER_POLITENESS__MIN_DELAY_S", "0.5")
    monkeypatch.setenv("WEBGATHER_SCOPE__MAX_DEPTH", "4")
    assert main(["config", "show", "--config", str(toml), "--max-depth", "3", "--ignore-robots"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert set(rows) == {s.key for s in settings()}
    assert rows["fetch.concurrency"].split()[1:4] == ["8", "file", str(toml)]
    assert rows["max_pages"].split()[1:3] == ["50", "file"]
    assert rows["politeness.min_delay_s"].split()[1:4] == ["0.5", "env", "WEBGATHER_POLITENESS__MIN_DELAY_S"]
    assert rows["scope.max_depth"].split()[1:4] == ["3", "flag", "--max-depth"]  # flag > env > file
    assert rows["robots.obey"].split()[1:4] == ["false", "flag", "--ignore-robots"]
    assert rows["fetch.max_redirects"].split()[1:3] == ["5", "default"]
    assert rows["fetch.concurrency"].endswith("never the crawl's.")
    assert rows["fetch.user_agent"].split()[1] == f'"{CrawlConfig().fetch.user_agent.split()[0]}'


def test_every_setting_has_a_one_line_doc_from_the_sections_module() -> None:
    undocumented = [s.key for s in settings() if not s.doc]
    assert undocumented == []
    assert all("\n" not in s.doc for s in settings())
    by_key = {s.key: s for s in settings()}
    assert by_key["recrawl.new_url_share"].doc == "Share of the budget kept for never-seen URLs while some are queued."
    assert by_key["fetch.http_client"].type_text == '"native" | "aiohttp"'
    assert by_key["politeness.min_delay_s"].default == CrawlConfig().politeness.min_delay_s


def test_the_committed_reference_is_up_to_date() -> None:
    committed = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    assert committed == markdown(), "run: .venv/bin/webgather config show --markdown > docs/config.md"
    for setting in settings():
        assert f"| `{setting.key}` |" in committed


def test_markdown_is_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "--markdown"]) == 0
    assert capsys.readouterr().out == markdown()


@pytest.mark.parametrize(("argv", "needle"), [
    (["--delay", "-1"], "politeness.min_delay_s must be >= 0 (set by --delay)"),
    (["--max-repeated-segments", "0"], "max_repeated_segments must be >= 1 (set by --max-repeated-segments)"),
    (["--markdown", "--delay", "2"], "--markdown documents the defaults"),
    (["--config", "/nonexistent/crawl.toml"], "cannot read config file /nonexistent/crawl.toml"),
])
def test_bad_values_are_one_line_errors(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
