"""``webgather`` command line: argparse -> config -> the command's entry point.

User errors (:class:`~webgather.errors.WebgatherError`) print one line and exit
with status 2; they never show a traceback. Ctrl-C exits with 130. A write that
failed (:class:`~webgather.errors.WriteFailed`: disk full, quota, I/O error)
exits with 3: the crawl stopped, what it stored is whole, and the same command
resumes it once there is room. A cluster crawl that did not finish exits with
1; one that finished but lost buckets it could not recover after a node died
exits with 4 (``runtime.cluster_losses``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webgather.errors import WebgatherError, WriteFailed

__all__ = ["COMMAND_MODULES", "EXIT_WRITE_FAILED", "build_parser", "main"]

COMMAND_MODULES = (
    "webgather.commands.crawl",
    "webgather.commands.demo",
    "webgather.commands.testweb",
    "webgather.commands.analyze",
    "webgather.commands.simulate",
    "webgather.commands.recrawl",
    "webgather.commands.node",
    "webgather.commands.cluster",
    "webgather.commands.replay",
)
EXIT_WRITE_FAILED = 3
"""Exit status when a write failed (disk full): stopped cleanly, run the same command again once there is room."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; only ``command``'s when it names one.

    Importing every command module costs ~0.5 s and ~17 MB (demo and testweb
    pull in scipy), which a crawl would pay for nothing.
    """
    parser = argparse.ArgumentParser(
        prog="webgather",
        description="A distributed, polite, resumable web crawler.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    only = [name for name in COMMAND_MODULES if name.rpartition(".")[2] == command]
    for name in only or COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except WriteFailed as exc:
        print(f"webgather: error: {exc}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    except ExceptionGroup as group:  # a cluster node's task group: its crawl stopped on a failed write
        failed = _first_write_failed(group)
        if failed is None:
            raise
        print(f"webgather: error: {failed}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    except WebgatherError as exc:
        print(f"webgather: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("webgather: interrupted", file=sys.stderr)
        return 130
    return code


def _first_write_failed(group: BaseExceptionGroup[BaseException]) -> WriteFailed | None:
    for exc in group.exceptions:
        found = _first_write_failed(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, WriteFailed):
            return found
    return None
