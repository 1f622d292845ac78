"""Logging for the command line, configured once per process by :func:`webgather.cli.main`.

Library code logs through ``logging.getLogger(__name__)`` (children of the
``webgather`` logger) and never prints. The package adds a ``NullHandler`` to
``webgather`` (``webgather/__init__.py``), so a program that imports webgather
sees nothing until it configures logging, and can send the ``webgather`` logger
wherever it likes.

The command line (:func:`configure`, from ``--log-level``, ``--log-format`` and
``--log-file``, :func:`add_log_options`) sets the ``webgather`` logger's level and
puts one handler on the root logger: other libraries' records show from WARNING
(or the chosen level if higher), so ``--log-level debug`` is webgather's debug.
Text lines are ``TIME LEVEL LOGGER: MESSAGE`` (time ISO-8601 UTC); JSON lines are
one object each: ``time``, ``level``, ``logger``, ``message``, ``node`` when the
record comes from a node's work (:func:`node_context`), and any ``extra`` fields.
The default handler writes to whatever ``sys.stderr`` is when a record is
emitted (rich's live display and pytest replace it). Workers of ``--workers N``
get the level and format (:func:`child_args`); their stderr is ``node.log``.

What still prints, on purpose: a command's result for its user, in
``webgather.commands`` (the summary of a crawl, a cycle or a cluster run on
stdout, ``cluster status``, the ``analyze`` report, ``testweb``'s addresses and
facts, ``demo``'s closure check, ``simulate``'s tables), and
``cli.main``'s exit line (``webgather: error: ...``, ``webgather: interrupted``):
that one stays a plain line on stderr in every format, like argparse's own
usage errors, because it answers the command line (often before any work
began, maybe because the log file cannot be opened) and scripts match it; with
``--log-file`` it is logged there as well, so the file says why the run ended.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from webgather.errors import ConfigError

__all__ = [
    "FORMATS", "LEVELS", "JsonFormatter", "LogSettings", "TextFormatter", "add_log_options", "child_args",
    "configure", "current_node", "logs_to_file", "node_context", "reset", "settings_from_args",
]

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
PACKAGE_LOGGER = "webgather"

_NODE: contextvars.ContextVar[str | None] = contextvars.ContextVar("webgather_log_node", default=None)
_STANDARD_FIELDS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "node"}


@dataclass(frozen=True)
class LogSettings:
    level: str = "info"
    """Lowest level of webgather's records that is written: debug, info, warning or error."""
    format: str = "text"
    """``text`` (one line per record) or ``json`` (one object per line)."""
    file: str | None = None
    """Append to this file instead of writing to stderr."""


def add_log_options(parser: argparse.ArgumentParser) -> None:
    """``--log-level``, ``--log-format`` and ``--log-file``, for a command that runs a crawl or a service."""
    add = parser.add_argument
    add("--log-level", choices=LEVELS, default=LogSettings.level,
        help="lowest level of diagnostics written (default: %(default)s)")
    add("--log-format", choices=FORMATS, default=LogSettings.format,
        help="text lines, or one JSON object per line with time, level, logger, message, node (default: %(default)s)")
    add("--log-file", default=None, metavar="PATH", help="append diagnostics to PATH (default: stderr)")


def settings_from_args(args: argparse.Namespace) -> LogSettings:
    """The settings a command line gave (defaults for a command without the options)."""
    return LogSettings(level=getattr(args, "log_level", None) or LogSettings.level,
                       format=getattr(args, "log_format", None) or LogSettings.format,
                       file=getattr(args, "log_file", None))


def current_node() -> str | None:
    """The node whose work is running in this context (:func:`node_context`), if any."""
    return _NODE.get()


@contextlib.contextmanager
def node_context(node_id: str) -> Iterator[None]:
    """Records logged in this context (and tasks started in it) carry ``node`` = ``node_id``."""
    token = _NODE.set(node_id)
    try:
        yield
    finally:
        _NODE.reset(token)


def _utc_time(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


class TextFormatter(logging.Formatter):
    """``2026-11-25T17:21:07.123Z WARNING webgather.runtime.engine.robots_driver: robots.txt of ...``."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_utc_time(record)} {record.levelname} {record.name}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (JSON escapes the newlines a message may hold)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": _utc_time(record), "level": record.levelname.lower(),
                                 "logger": record.name, "message": record.getMessage()}
        node = getattr(record, "node", None) or _NODE.get()
        if node is not None:
            entry["node"] = node
        entry.update((k, v) for k, v in record.__dict__.items() if k not in _STANDARD_FIELDS and k not in entry)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the current ``sys.stderr``, not the one there was when it was made."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


_installed: list[tuple[logging.Handler, LogSettings]] = []
"""The handler :func:`configure` put on the root logger, and its settings (at most one)."""


def configure(settings: LogSettings) -> None:
    """Make ``settings`` this process's logging (again: the previous handler is replaced)."""
    if settings.level not in LEVELS or settings.format not in FORMATS:
        raise ConfigError(f"log level must be one of {', '.join(LEVELS)} and format one of {', '.join(FORMATS)}")
    handler = _StderrHandler() if settings.file is None else _file_handler(settings.file)
    handler.setFormatter(JsonFormatter() if settings.format == "json" else TextFormatter())
    reset()
    root = logging.getLogger()
    _installed.append((handler, settings))
    root.addHandler(handler)
    level = logging.getLevelNamesMapping()[settings.level.upper()]
    logging.getLogger(PACKAGE_LOGGER).setLevel(level)
    root.setLevel(max(level, logging.WARNING))


def _file_handler(path: str) -> logging.Handler:
    try:
        return logging.FileHandler(path, mode="a", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot open the log file {path}: {exc.strerror or exc}") from exc


def reset() -> None:
    """Undo :func:`configure` (if it ran): its handler off the root logger, the levels it set back to
    Python's defaults."""
    if not _installed:
        return
    root = logging.getLogger()
    for old, _ in _installed:
        root.removeHandler(old)
        old.close()
    _installed.clear()
    logging.getLogger(PACKAGE_LOGGER).setLevel(logging.NOTSET)
    root.setLevel(logging.WARNING)


def logs_to_file() -> bool:
    """Whether :func:`configure` sent the diagnostics to a file (not stderr)."""
    return any(settings.file is not None for _, settings in _installed)


def child_args() -> list[str]:
    """The flags that give a worker process this process's level and format (not the file: a
    worker's stderr is its own log); none if logging was not configured by :func:`configure`."""
    if not _installed:
        return []
    settings = _installed[0][1]
    return ["--log-level", settings.level, "--log-format", settings.format]
