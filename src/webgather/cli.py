"""``webgather`` command line: argparse -> config -> the command's entry point.

User errors (:class:`~webgather.errors.WebgatherError`) print one line and exit
with status 2; they never show a traceback. Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webgather.errors import WebgatherError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

COMMAND_MODULES = (
    "webgather.commands.crawl",
    "webgather.commands.demo",
    "webgather.commands.testweb",
    "webgather.commands.analyze",
    "webgather.commands.simulate",
    "webgather.commands.recrawl",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="webgather",
        description="A distributed, polite, resumable web crawler.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except WebgatherError as exc:
        print(f"webgather: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("webgather: interrupted", file=sys.stderr)
        return 130
    return code
