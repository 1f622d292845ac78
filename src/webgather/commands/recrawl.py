"""``webgather recrawl DIR``: one more re-crawl cycle over the crawl in DIR.

Also the options of ``webgather crawl --continuous --cycle DURATION`` (which
keeps re-crawling the collection in ``--out``, one cycle every DURATION).
Both resume after a kill: the next run continues an unfinished cycle.
Re-crawl options map onto :class:`webgather.config.RecrawlConfig`.

On the directory of a cluster crawl (``crawl --workers N``: ``DIR/nodes/w0..``)
``recrawl DIR`` runs the cycle with as many worker processes (``--workers``
to change it) over the crawl's embedded Redis (``DIR/redis``) or ``--redis URL
--crawl NAME``; the crawl's settings come from its stored definition, the
re-crawl ones from this command line. See :mod:`webgather.runtime.cluster_run`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from webgather.config import CrawlConfig
from webgather.errors import ConfigError
from webgather.store.outdir import prepare_out_dir

__all__ = ["add_recrawl_options", "parse_duration", "print_cycle", "recrawl_cli", "register", "run_continuous_main"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``6h``, ``1.5d`` or ``1w``."""
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 90s, 30m, 6h, 1d)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def register(sub: Any) -> None:
    from webgather.commands.crawl import add_crawl_options

    parser = sub.add_parser("recrawl", help="run one more re-crawl cycle over the crawl in DIR")
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


def add_recrawl_options(parser: argparse.ArgumentParser, *, continuous: bool = False) -> None:
    add = parser.add_argument
    if continuous:
        add("--continuous", action="store_true", help="keep re-crawling the collection in --out, one cycle per --cycle")
        add("--max-cycles", type=int, default=None, help="with --continuous: stop after this many cycles")
    add("--cycle", type=parse_duration, default=None, metavar="DURATION", help="cycle length (e.g. 6h, 1d)")
    add("--policy", choices=["uniform", "proportional", "optimal"], default=None, help="revisit policy")
    add("--budget", type=int, default=None, help="page fetches per cycle (revisits and new URLs)")
    add("--new-share", type=float, default=None, help="share of the budget kept for never-seen URLs")
    add("--no-conditional", action="store_true", help="no If-None-Match / If-Modified-Since")
    add("--no-dedup", action="store_true", help="store unchanged payloads again instead of revisit records")


def recrawl_cli(args: argparse.Namespace) -> dict[str, Any]:
    """The re-crawl settings given on the command line (None: not given)."""
    return {
        "recrawl.cycle_s": getattr(args, "cycle", None),
        "recrawl.policy": getattr(args, "policy", None),
        "recrawl.budget_per_cycle": getattr(args, "budget", None),
        "recrawl.new_url_share": getattr(args, "new_share", None),
        "recrawl.conditional_get": False if getattr(args, "no_conditional", False) else None,
        "recrawl.dedup": False if getattr(args, "no_dedup", False) else None,
    }


def _main(args: argparse.Namespace) -> int:
    import uvloop

    from webgather.commands.crawl import config_from_args
    from webgather.recrawl.cycle import run_cycle

    from webgather.commands.redis_url import resolve_redis_url

    if args.out is not None and args.out != args.dir:
        raise ConfigError("recrawl: give the crawl directory as DIR, not --out")
    resolve_redis_url(args, use_env=args.crawl is not None)
    prepare_out_dir(args.dir, create=False)  # a missing DIR is the cycle's own error ("no crawl in DIR")
    args.out = args.dir
    config = config_from_args(args)
    if (Path(args.dir) / "nodes").is_dir() or args.workers or args.redis:
        return _cluster_main(args, config)
    summary = uvloop.run(run_cycle(config))
    print_cycle(summary)
    return 0 if summary["recrawl"]["cycle_done"] else 1


def _cluster_main(args: argparse.Namespace, config: CrawlConfig) -> int:
    """One cycle of a cluster crawl's directory with N worker processes."""
    from webgather.runtime.cluster_run import Cycles, run_workers

    out = Path(args.dir)
    if not (out / "nodes").is_dir():
        raise ConfigError(f"recrawl: {out} is a one-node crawl (no {out / 'nodes'}); --workers and --redis "
                          "need the directory of a cluster crawl")
    workers = args.workers or len([d for d in (out / "nodes").iterdir() if re.fullmatch(r"w\d+", d.name)])
    if not workers:
        raise ConfigError(f"recrawl: {out / 'nodes'} has no worker directories (w0, w1, ...): give --workers N")
    if args.redis is None and not (out / "redis").is_dir():
        raise ConfigError(f"recrawl: {out} has no embedded Redis ({out / 'redis'}): give --redis URL --crawl NAME")
    extra = ["--concurrency", str(args.concurrency)] if args.concurrency else []
    summary = run_workers(config, [], workers=workers, redis_url=args.redis, crawl=args.crawl, node_args=extra,
                          cycles=Cycles(on_cycle=print_cycle, stored_settings=True))
    return 0 if summary["finished"] and summary.get("recrawl", {}).get("cycle_done") else 1


def run_continuous_main(config: CrawlConfig, seeds: list[str], max_cycles: int | None) -> int:
    """``crawl --continuous``: cycles until ``max_cycles`` or a signal; prints each cycle."""
    import uvloop

    from webgather.recrawl.cycle import run_continuous

    uvloop.run(run_continuous(config, seeds, max_cycles=max_cycles, on_cycle=print_cycle))
    return 0


def print_cycle(summary: dict[str, Any]) -> None:
    if summary.get("backend_error"):  # a cluster cycle whose Redis stayed away: the workers stopped
        print(f"backend: {summary['backend_error']}", file=sys.stdout)
    if not summary.get("recrawl"):
        print("cycle stopped before any node reported it; it resumes on the next run", file=sys.stdout)
        return
    r = summary["recrawl"]
    counts, totals = r["counts"], r["totals"]
    status = ", ".join(f"{k}: {v}" for k, v in summary.get("status", {}).items()) or "none"
    print(
        f"cycle {r['cycle']} ({r['policy']}, budget {r['budget'] or 'none'}): "
        f"{'done' if r['cycle_done'] else 'stopped, resumes on the next run'}\n"
        f"fetches {counts.get('fetches', 0)}: new pages {counts.get('new_pages', 0)}, "
        f"revisits {counts.get('revisits', 0)} of {r['planned_revisits']} planned "
        f"(changed {counts.get('changed', 0)}, 304 {counts.get('not_modified', 0)}, "
        f"same digest {counts.get('same_digest', 0)}), robots.txt {summary.get('robots_fetches', 0)}\n"
        f"status  {status}\n"
        f"archived {counts.get('bytes_archived', 0)} payload bytes; near-duplicates {counts.get('near_duplicates', 0)}\n"
        f"URLs {totals['urls']}: active {totals['active']}, dead {totals['dead']} "
        f"(new this cycle: {len(r['dead_this_cycle'])}); estimated freshness now {r['estimated_freshness']}",
        file=sys.stdout,
    )
    for url, reason in r["dead_this_cycle"][:20]:
        print(f"  dead ({reason}) {url}")
