"""``webgather recrawl DIR``: one more re-crawl cycle over the crawl in DIR.

Also the options of ``webgather crawl --continuous --cycle DURATION`` (which
keeps re-crawling the collection in ``--out``, one cycle every DURATION).
Both resume after a kill: the next run continues an unfinished cycle.
Re-crawl options map onto :class:`webgather.config.RecrawlConfig`.

On the directory of a cluster crawl (``crawl --workers N``: ``DIR/nodes/w0..``)
``recrawl DIR`` runs the cycle with as many worker processes (``--workers``
to change it) over the crawl's embedded Redis (``DIR/redis``) or ``--redis URL
--crawl NAME``; the crawl's settings come from its stored definition, the
re-crawl ones from this command line. See :mod:`webgather.runtime.launch.workers`.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from webgather.commands.options import add_crawl_options, add_recrawl_options, check_counts, config_from_args
from webgather.commands.report import cycle_exit_code, exit_code, print_cycle
from webgather.config import CrawlConfig
from webgather.errors import ConfigError
from webgather.exitcodes import ExitCode, help_epilog
from webgather.store.outdir import prepare_out_dir

__all__ = ["register", "run_continuous_main"]

_CRAWL_MARKS = ("seeds.txt", "state", "nodes")
"""What a crawl leaves in its directory: a one-node crawl's seeds and state, a cluster crawl's nodes."""

def register(sub: Any) -> None:
    parser = sub.add_parser("recrawl", help="run one more re-crawl cycle over the crawl in DIR",
                               epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", metavar="DIR", help="output directory of an earlier crawl")
    add_crawl_options(parser)
    add_recrawl_options(parser)
    add = parser.add_argument
    add("--workers", type=int, default=None, help="a cluster crawl's directory: this many worker processes "
        "(default: as many as DIR/nodes has)")
    add("--redis", default=None, help="a cluster crawl's Redis, or @FILE holding its URL (default: "
        "WEBGATHER_REDIS_URL if --crawl is given, else the embedded one under DIR)")
    from webgather.commands.redis_url import add_redis_file_option

    add_redis_file_option(parser)
    add("--crawl", default=None, help="with --redis: the crawl's name there")
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    import uvloop

    from webgather.runtime.launch.crawl import run_cycle

    from webgather.commands.redis_url import resolve_redis_url

    if args.out is not None and args.out != args.dir:
        raise ConfigError("recrawl: give the crawl directory as DIR, not --out")
    check_counts(args)
    resolve_redis_url(args, use_env=args.crawl is not None)
    prepare_out_dir(args.dir, create=False)  # an existing file or an unwritable DIR: that error first
    _check_crawl_dir(Path(args.dir))
    args.out = args.dir
    config = config_from_args(args)
    if (Path(args.dir) / "nodes").is_dir() or args.workers or args.redis:
        return _cluster_main(args, config)
    summary = uvloop.run(run_cycle(config))
    print_cycle(summary)
    return cycle_exit_code(summary)


def _check_crawl_dir(out: Path) -> None:
    """DIR must hold an earlier crawl: else the cycle would start one from no seeds and say so instead."""
    if not out.exists():
        raise ConfigError(f"recrawl: {out} does not exist: give the directory of an earlier crawl (its --out)")
    if out.is_dir() and not any((out / name).exists() for name in _CRAWL_MARKS):
        raise ConfigError(f"recrawl: {out} holds no crawl (no {', '.join(_CRAWL_MARKS)}): give the directory "
                          "of an earlier crawl (its --out)")


def _cluster_main(args: argparse.Namespace, config: CrawlConfig) -> int:
    """One cycle of a cluster crawl's directory with N worker processes."""
    from webgather.runtime.launch.workers import Cycles, run_workers

    out = Path(args.dir)
    if not (out / "nodes").is_dir():
        raise ConfigError(f"recrawl: {out} is a one-node crawl (no {out / 'nodes'}); --workers and --redis "
                          "need the directory of a cluster crawl")
    workers = args.workers or len([d for d in (out / "nodes").iterdir() if re.fullmatch(r"w\d+", d.name)])
    if not workers:
        raise ConfigError(f"recrawl: {out / 'nodes'} has no worker directories (w0, w1, ...): give --workers N")
    if args.redis is None and not (out / "redis").is_dir():
        raise ConfigError(f"recrawl: {out} has no embedded Redis ({out / 'redis'}): give --redis URL --crawl NAME")
    extra = ["--concurrency", str(config.fetch.concurrency)]  # its layers' (file, env, flag): per node
    summary = run_workers(config, [], workers=workers, redis_url=args.redis, crawl=args.crawl, node_args=extra,
                          cycles=Cycles(on_cycle=print_cycle, stored_settings=True))
    return cycle_exit_code(summary) if summary["finished"] else exit_code(summary) or ExitCode.NOT_ENDED


def run_continuous_main(config: CrawlConfig, seeds: list[str], max_cycles: int | None) -> int:
    """``crawl --continuous``: cycles until ``max_cycles`` or a signal; prints each cycle; the last one's
    exit status (:func:`~webgather.commands.report.cycle_exit_code`)."""
    import uvloop

    from webgather.runtime.launch.crawl import run_continuous

    last: list[dict[str, Any]] = []

    def shown(summary: dict[str, Any]) -> None:
        print_cycle(summary)
        last[:] = [summary]

    uvloop.run(run_continuous(config, seeds, max_cycles=max_cycles, on_cycle=shown))
    return cycle_exit_code(last[0]) if last else ExitCode.DONE
