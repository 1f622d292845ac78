"""Every ``--help`` shows defaults (a crawl flag's from the config dataclasses); ``--version``."""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Iterator

import pytest

from webgather.cli import build_parser, main
from webgather.commands.flag_settings import FLAG_SETTINGS
from webgather.commands.options import cli_settings
from webgather.config import CrawlConfig
from webgather.config.reference import settings, value_of
from webgather.parse import native


def _parsers(parser: argparse.ArgumentParser, path: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}".strip())


def _flat(text: str) -> str:
    return " ".join(text.split())  # argparse wraps lines anywhere


def _help_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = parser._get_formatter()
    formatter.add_argument(action)
    return _flat(formatter.format_help())


def _shown(value: object) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def test_every_option_with_a_default_shows_it() -> None:
    missing = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if not action.option_strings or action.default in (None, False, argparse.SUPPRESS):
                continue
            if _shown(action.default) not in _help_of(parser, action):
                missing.append(f"webgather {path} {action.option_strings[0]}")
    assert missing == []


@pytest.mark.parametrize("command", ["crawl", "recrawl", "config show"])
def test_crawl_flags_show_the_config_default(command: str) -> None:
    parser = dict(_parsers(build_parser()))[command]
    defaults = CrawlConfig()
    shown = 0
    for action in parser._actions:
        flag = next((f for f in action.option_strings if f in FLAG_SETTINGS), None)
        if flag is None:
            continue
        key, text = FLAG_SETTINGS[flag], _help_of(parser, action)
        if action.nargs == 0:
            assert f"(sets {key} to false)" in text, text
            continue
        value = value_of(defaults, key)
        value = ",".join(value) or "none" if isinstance(value, tuple) else "none" if value is None else value
        assert f"(default: {value}; setting {key})" in text, text
        shown += 1
    assert shown >= 8


def test_the_issue_s_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["crawl", "--help"])
    text = _flat(capsys.readouterr().out)
    for needle in ("(default: 1.0; setting politeness.min_delay_s)", "(default: 64; setting fetch.concurrency)",
                   "(default: 4; setting politeness.per_ip_connections)", "(default: none; setting scope.max_depth)",
                   "--max-pages-per-host MAX_PAGES_PER_HOST Pages fetched from one host at most"):
        assert needle in text


def test_version_is_the_installed_distribution_s(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the line at the terminal's width
    # which path parses: C or pure Python
    assert out == f"webgather {importlib.metadata.version('webgather')}; parse core: {native.status()}"


def _sample(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return [action.option_strings[0]]
    return [action.option_strings[0], str(next(iter(action.choices))) if action.choices else "1"]


def test_the_flag_table_is_what_the_options_set() -> None:
    parser = dict(_parsers(build_parser()))["crawl"]
    keys = {s.key for s in settings()}
    for action in parser._actions:
        flag = next((f for f in action.option_strings if f in FLAG_SETTINGS), None)
        if flag is None:
            continue
        given = {k: v for k, v in cli_settings(parser.parse_args(_sample(action))).items() if v is not None}
        assert given.keys() == {FLAG_SETTINGS[flag]} <= keys, flag
    every = [arg for a in parser._actions if any(f in FLAG_SETTINGS for f in a.option_strings) for arg in _sample(a)]
    given = {k for k, v in cli_settings(parser.parse_args(every)).items() if v is not None}
    assert given == set(FLAG_SETTINGS.values())
