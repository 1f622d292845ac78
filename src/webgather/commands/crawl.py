"""``webgather crawl SEED... --out DIR``: crawl on this machine; the same command resumes.

Its options are :mod:`webgather.commands.options`; ``--workers`` / ``--redis`` hand the
crawl to :mod:`webgather.commands.node`, ``--continuous`` to :mod:`webgather.commands.recrawl`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from webgather.cluster._common import check_node
from webgather.commands.options import (
    add_cluster_options, add_crawl_options, add_recrawl_options, check_combinations, config_from_args,
)
from webgather.commands.report import exit_code, print_summary
from webgather.config import CrawlConfig
from webgather.exitcodes import help_epilog
from webgather.errors import ConfigError
from webgather.seeds import read_seeds
from webgather.store.outdir import prepare_out_dir

__all__ = ["check_seed_addresses", "print_summary", "register", "run_main_job"]


def register(sub: Any) -> None:
    parser = sub.add_parser("crawl", help="crawl from seeds into --out (resumes if --out has state)",
                               epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seeds", nargs="*", metavar="SEED", help="seed URLs, or @FILE with one per line")
    parser.add_argument("--allow-bare-hosts", action="store_true",
                        help="accept seeds whose host is one label (localhost, intranet names); "
                        "without it such a seed is refused as a likely typo")
    add_crawl_options(parser)
    add_recrawl_options(parser, continuous=True)
    add_cluster_options(parser)
    parser.set_defaults(func=_main)


def run_main_job(config: CrawlConfig, seeds: list[str]) -> dict[str, Any]:
    """Run a single-node crawl under uvloop; returns the summary."""
    import uvloop

    from webgather.runtime.launch.crawl import run_crawl

    return uvloop.run(run_crawl(config, seeds, progress=config.progress and sys.stderr.isatty()))


def _main(args: argparse.Namespace) -> int:
    from webgather.commands.redis_url import resolve_redis_url

    check_combinations(args)
    resolve_redis_url(args, use_env=args.crawl is not None)  # a named cluster crawl lives in a shared Redis
    config = config_from_args(args)
    seeds = read_seeds(args.seeds, allow_bare_hosts=args.allow_bare_hosts)
    if args.node_id is not None:
        check_node(args.node_id)  # before any directory or connection
    check_seed_addresses(config, seeds)
    prepare_out_dir(config.out_dir)
    if getattr(args, "workers", None) or getattr(args, "redis", None):
        from webgather.commands.node import run_cluster_main

        return run_cluster_main(args, config, seeds)
    if getattr(args, "continuous", False):
        from webgather.commands.recrawl import run_continuous_main

        return run_continuous_main(config, seeds, args.max_cycles)
    summary = run_main_job(config, seeds)
    print_summary(summary)
    return exit_code(summary)


def check_seed_addresses(config: CrawlConfig, seeds: list[str]) -> None:
    """A seed the destination guard would refuse is a contradiction in the command, not a crawl that
    "finishes" with nothing: a one-line error. Only addresses known without DNS count (IP literals,
    the resolve file); a name whose DNS answer is private is refused during the crawl."""
    from webgather.fetch.guard import AddressGuard
    from webgather.fetch.resolver import ip_literal, load_resolve_file
    from webgather.urls import hostname

    guard = AddressGuard.from_config(config.fetch)
    static = load_resolve_file(config.fetch.resolve_file) if config.fetch.resolve_file else {}
    for url in seeds:
        host = hostname(url)
        address = ip_literal(host) or static.get(host.strip("[]").rstrip("."))
        if address is not None and not guard.permits(address):
            raise ConfigError(f"seed {url} is at {address}, a private address fetch.deny_private_addresses refuses: "
                              f"add --allow-address {address} (or its network) to crawl it")


