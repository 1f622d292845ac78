"""webgather.logs: the command line's logging (formats, levels, file, workers' flags) and no prints in the library."""

from __future__ import annotations

import ast
import io
import json
import logging
import re
import sys
from pathlib import Path

import pytest

import webgather
from webgather.errors import ConfigError
from webgather.logs import LogSettings, child_args, configure, node_context
from webgather.runtime.launch.workers import node_command

SRC = Path(webgather.__file__).parent
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) [\w.]+: ")
PRINTING_ALLOWED = ("commands/", "cli.py", "_entry.py")
"""Where a command's result for its user may be printed (webgather.logs says which)."""


def _json_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_json_lines_carry_time_level_logger_message_node_and_extra_fields(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    configure(LogSettings(format="json", file=str(path)))
    log = logging.getLogger("webgather.runtime.example")
    log.warning("no node here")
    with node_context("w3"):
        log.info("two\nlines, %d args", 2, extra={"host": "a.test", "attempt": 3})
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    first, second, third = _json_lines(path)
    assert ISO_UTC.match(str(first["time"])) and "node" not in first
    assert {k: first[k] for k in ("level", "logger", "message")} == {
        "level": "warning", "logger": "webgather.runtime.example", "message": "no node here"}
    assert second["message"] == "two\nlines, 2 args" and second["level"] == "info"
    assert second["node"] == "w3" and second["host"] == "a.test" and second["attempt"] == 3
    assert third["level"] == "error" and "ValueError: boom" in str(third["exc"]) and third["node"] == "w3"


def test_text_lines_have_time_level_logger_and_go_to_the_current_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    configure(LogSettings())
    later = io.StringIO()  # sys.stderr replaced after configure(), as rich's live display does
    monkeypatch.setattr(sys, "stderr", later)
    logging.getLogger("webgather.cluster.x").warning("webgather node a: backend back after 1.0 s; resuming")
    err = later.getvalue()
    assert err.count("\n") == 1 and TEXT_LINE.match(err), err
    assert err.endswith(" WARNING webgather.cluster.x: webgather node a: backend back after 1.0 s; resuming\n")


def test_level_warning_hides_info_and_other_libraries_show_from_warning(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    configure(LogSettings(level="warning", file=str(path)))
    logging.getLogger("webgather.a").info("hidden info")
    logging.getLogger("webgather.a").warning("shown warning")
    configure(LogSettings(level="debug", file=str(path)))
    logging.getLogger("webgather.a").debug("shown debug")
    logging.getLogger("somelib").info("other library's info")
    logging.getLogger("somelib").warning("other library's warning")
    text = path.read_text()
    assert "hidden info" not in text and "other library's info" not in text
    assert "shown warning" in text and "shown debug" in text and "other library's warning" in text
    assert all(TEXT_LINE.match(line) for line in text.splitlines()), text


def test_a_log_file_that_cannot_be_opened_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot open the log file .*/missing/log.txt"):
        configure(LogSettings(file=str(tmp_path / "missing" / "log.txt")))


def test_workers_get_the_level_and_format_but_not_the_file(tmp_path: Path) -> None:
    assert child_args() == []
    configure(LogSettings(level="warning", format="json", file=str(tmp_path / "parent.log")))
    argv = node_command("c", Path("out"), "w0", ["--concurrency", "4"])
    assert argv[-6:] == ["--log-level", "warning", "--log-format", "json", "--concurrency", "4"]
    assert "--log-file" not in argv and str(tmp_path) not in " ".join(argv)


def _prints(tree: ast.AST) -> list[int]:
    """Lines that call print() or write to sys.stdout / sys.stderr."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print":
            found.append(node.lineno)
        elif isinstance(func, ast.Attribute) and func.attr == "write" and isinstance(func.value, ast.Attribute) \
                and func.value.attr in ("stdout", "stderr"):
            found.append(node.lineno)
    return found


def test_library_modules_do_not_print() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if not name.startswith(PRINTING_ALLOWED):
            offenders += [f"{name}:{line}" for line in _prints(ast.parse(path.read_text()))]
    assert offenders == [], "diagnostics go through logging.getLogger(__name__); results print in commands/"
    assert _prints(ast.parse("import sys\nprint('x')\nsys.stderr.write('y')\n")) == [2, 3]  # the check sees both
