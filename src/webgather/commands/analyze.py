"""``webgather analyze DIR [--report OUT] [--sample N] [--seed S]``: what did a crawl collect?

Reads the crawl's logs (one node's DIR, or a cluster's DIR/nodes/*), prints a
one-page summary and writes ``report.json``, PNG plots and ``report.html``
into OUT (default ``DIR/report``). See :mod:`webgather.analysis`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from webgather.errors import ConfigError

__all__ = ["register"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value


def register(sub: Any) -> None:
    parser = sub.add_parser("analyze", help="web-structure, community and load analysis of a crawl")
    add = parser.add_argument
    add("dir", metavar="DIR", help="crawl directory (--out of a crawl; a cluster's DIR holds nodes/*)")
    add("--report", metavar="OUT", default=None, help="report directory (default DIR/report)")
    add("--sample", metavar="N", type=_positive_int, default=100, help="BFS sources for shortest paths")
    add("--seed", metavar="S", type=int, default=0, help="seed of every random choice")
    add("--interval-s", type=float, default=None, help="load-balance interval (default: automatic)")
    add("--top", metavar="K", type=_positive_int, default=10, help="top pages and hosts listed")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from webgather.analysis import AnalysisOptions, analyze, load_crawl, summary_text, write_report
    from webgather.analysis.plots import plot_notes
    from webgather.clock import SystemClock

    if args.interval_s is not None and not args.interval_s > 0:
        raise ConfigError(f"--interval-s must be > 0, not {args.interval_s}")
    directory = Path(args.dir)
    out = Path(args.report) if args.report else directory / "report"
    options = AnalysisOptions(
        sample_sources=args.sample, seed=args.seed, top_k=args.top, interval_s=args.interval_s
    )
    clock = SystemClock()
    started = clock.monotonic()
    graph, table = load_crawl(directory)
    read_s = round(clock.monotonic() - started, 3)
    analysis = analyze(graph, table, options, timer=clock.monotonic)
    analysis.timings_s = {"read_logs": read_s, **analysis.timings_s}
    title = f"webgather analysis of {directory}"
    written = write_report(analysis, out, title)
    print(summary_text(analysis, title), end="")
    print("report: " + ", ".join(str(p) for p in written.values()))
    for name, note in plot_notes(analysis).items():
        print(f"{name} {note}")
    return 0
