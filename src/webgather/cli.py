"""``webgather`` command line: argparse -> config -> the command's entry point.

Exit codes are :class:`webgather.exitcodes.ExitCode`, one table on every path, which
``--help`` prints. User errors (:class:`~webgather.errors.WebgatherError`) print one
line and exit with USAGE; they never show a traceback. Ctrl-C exits with INTERRUPTED.
A write that failed (:class:`~webgather.errors.WriteFailed`: disk full, quota, I/O
error) exits with WRITE_FAILED: the crawl stopped, what it stored is whole, and the
same command resumes it once there is room. :class:`~webgather.errors.CannotContinue`
exits with CANNOT_CONTINUE; the crawl's own outcomes (NOT_ENDED, DATA_LOST,
NOTHING_FETCHED) are ``commands.report``'s.

Logging is configured here, once, before the command runs (:mod:`webgather.logs`:
``--log-level``, ``--log-format``, ``--log-file`` where the command has them, the
defaults elsewhere). The exit line stays a plain line on stderr (see there why).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import logging
import sys
import typing
from collections.abc import Iterator, Sequence

from webgather.config.reference import plain_text
from webgather.errors import CannotContinue, WebgatherError, WriteFailed
from webgather.exitcodes import ExitCode, help_epilog
from webgather.logs import configure, logs_to_file, settings_from_args
from webgather.parse import native

__all__ = ["COMMAND_MODULES", "EXIT_WRITE_FAILED", "build_parser", "main", "package_version"]

_E = typing.TypeVar("_E", bound=BaseException)

COMMAND_MODULES = (
    "webgather.commands.crawl",
    "webgather.commands.demo",
    "webgather.commands.testweb",
    "webgather.commands.analyze",
    "webgather.commands.simulate",
    "webgather.commands.recrawl",
    "webgather.commands.node",
    "webgather.commands.cluster",
    "webgather.commands.status",
    "webgather.commands.config",
    "webgather.commands.replay",
    "webgather.commands.export",
    "webgather.commands.surt",
)
EXIT_WRITE_FAILED = ExitCode.WRITE_FAILED
"""Exit status when a write failed (disk full): stopped cleanly, run the same command again once there is room."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; only ``command``'s when it names one.

    Importing every command module costs ~0.5 s and ~17 MB (demo and testweb
    pull in scipy), which a crawl would pay for nothing.
    """
    parser = _Parser(
        prog="webgather",
        description="A distributed, polite, resumable web crawler.",
        epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version",
                        version=f"webgather {package_version()}; parse core: {native.status()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    only = [name for name in COMMAND_MODULES if name.rpartition(".")[2] == command]
    for name in [] if command == "--version" else only or COMMAND_MODULES:  # --version needs no command
        importlib.import_module(name).register(sub)
    _show_defaults(parser)
    return parser


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Append ``(default: X)`` to every option, in ``parser`` and its subcommands, whose help does not
    mention its default yet (a crawl flag's comes from the config: ``commands.flag_settings``)."""
    for each in _parsers(parser):
        for action in each._actions:
            if (action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
                    and action.help != argparse.SUPPRESS and "default" not in (action.help or "")):
                text = f"(default: {plain_text(action.default)})".replace("%", "%%")  # help is %-formatted
                action.help = f"{action.help} {text}" if action.help else text


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, like every other user error (a crawl's usage text is 20 lines that
    would bury it); subcommands' parsers are of this class too (argparse makes them of the parent's)."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def package_version() -> str:
    """The installed distribution's version (what pip and the wheel say), not a copy in the source."""
    try:
        return importlib.metadata.version("webgather")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown: the package is not installed, e.g. run from a source tree)"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        configure(settings_from_args(args))
        code: int = args.func(args)
    except WriteFailed as exc:
        return _exit(f"webgather: error: {exc}", EXIT_WRITE_FAILED)
    except ExceptionGroup as group:  # a cluster node's task group: a failed write, or a node that cannot go on
        failed = _first_of(group, WriteFailed) or _first_of(group, CannotContinue)
        if failed is None:
            raise
        code = EXIT_WRITE_FAILED if isinstance(failed, WriteFailed) else ExitCode.CANNOT_CONTINUE
        return _exit(f"webgather: error: {failed}", code)
    except CannotContinue as exc:
        return _exit(f"webgather: error: {exc}", ExitCode.CANNOT_CONTINUE)
    except WebgatherError as exc:
        return _exit(f"webgather: error: {exc}", ExitCode.USAGE)
    except KeyboardInterrupt:
        return _exit("webgather: interrupted", ExitCode.INTERRUPTED, logging.WARNING)
    return int(code)


def _exit(line: str, code: int, level: int = logging.ERROR) -> int:
    """The exit line, as ``commands.report.exit_line`` writes it (cli imports no command module statically)."""
    print(line, file=sys.stderr)
    if logs_to_file():
        logging.getLogger(__name__).log(level, line)
    return code


def _first_of(group: BaseExceptionGroup[BaseException], kind: type[_E]) -> _E | None:
    for exc in group.exceptions:
        found = _first_of(exc, kind) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, kind):
            return found
    return None
