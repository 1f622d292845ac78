"""``webgather crawl SEED... --out DIR``: crawl on this machine; the same command resumes.

Options map one-to-one onto config fields (see :mod:`webgather.config`); a
``--config FILE`` (TOML) and ``WEBGATHER_*`` variables sit below them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from webgather.config import CrawlConfig, load
from webgather.errors import ConfigError
from webgather.seeds import read_seeds

__all__ = ["add_crawl_options", "check_combinations", "config_from_args", "register", "run_main_job"]


def register(sub: Any) -> None:
    parser = sub.add_parser("crawl", help="crawl from seeds into --out (resumes if --out has state)")
    parser.add_argument("seeds", nargs="*", metavar="SEED", help="seed URLs, or @FILE with one per line")
    add_crawl_options(parser)
    from webgather.commands.recrawl import add_recrawl_options

    add_recrawl_options(parser, continuous=True)
    add_cluster_options(parser)
    parser.set_defaults(func=_main)


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """``--workers N`` / ``--redis URL --crawl NAME``: a cluster crawl (see webgather.runtime.cluster_run)."""
    add = parser.add_argument
    add("--workers", type=int, default=None, help="crawl with N node processes on this machine")
    add("--redis", default=None, help="Redis URL of a cluster crawl (default with --workers: an embedded one under --out)")
    add("--crawl", default=None, help="name of the cluster crawl in that Redis (other nodes join it by name)")
    add("--buckets", type=int, default=None, help="M of the two-stage mapping (fixed per crawl; default 4096)")
    add("--partition-by", choices=["host", "ip", "gnp"], default=None,
        help="partition hosts over nodes by host, or by address (as first resolved; per-IP caps hold cluster-wide), "
             "or by GNP distance (a host goes to one of its K nearest nodes)")
    add("--gnp-landmark", action="append", default=None, metavar="URL",
        help="with --partition-by gnp: a small page every node httppings to place itself (repeat, at least 2)")
    add("--gnp-k", type=int, default=None, help="with --partition-by gnp: one of the K nearest nodes (default 3)")
    add("--node-id", default=None, help="with --redis and no --workers: this node's id")


def add_crawl_options(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--out", default=None, help="output directory (WARC, logs, state); default crawl-out")
    add("--config", default=None, help="TOML config file")
    add("--resolve", default=None, help='static "host address" map: resolve once, keep in a file')
    add("--max-pages", type=int, default=None, help="stop after this many pages")
    add("--delay", type=float, default=None, help="minimum seconds between requests to one host")
    add("--concurrency", type=int, default=None, help="requests in flight overall")
    add("--per-ip", type=int, default=None, help="concurrent requests per IP address")
    add("--scope", choices=["seed-hosts", "domains", "any"], default=None, help="which hosts to follow")
    add("--domain", action="append", default=None, help="with --scope domains: a domain to crawl (repeatable)")
    add("--max-depth", type=int, default=None, help="link hops from a seed")
    add("--max-pages-per-host", type=int, default=None)
    add("--max-url-length", type=int, default=None)
    add("--max-repeated-segments", type=int, default=None, help="trap guard: a path segment repeated more times is skipped")
    add("--user-agent", default=None, help="User-Agent with a contact URL")
    add("--ignore-robots", action="store_true", help="do not fetch or obey robots.txt (only for servers you own)")
    add("--no-progress", action="store_true", help="no live progress display")
    add("--pin-cpu", default=None, help='keep the node on one CPU: "auto" (default), "off", or a CPU index')
    add("--source-address", default=None, help="local IP address this node's connections come from")


def config_from_args(args: argparse.Namespace) -> CrawlConfig:
    cli: dict[str, Any] = {
        "out_dir": args.out,
        "fetch.resolve_file": args.resolve,
        "max_pages": args.max_pages,
        "politeness.min_delay_s": args.delay,
        "fetch.concurrency": args.concurrency,
        "politeness.per_ip_connections": args.per_ip,
        "scope.mode": args.scope,
        "scope.domains": tuple(args.domain) if args.domain else None,
        "scope.max_depth": args.max_depth,
        "scope.max_pages_per_host": args.max_pages_per_host,
        "scope.max_url_length": args.max_url_length,
        "scope.max_repeated_segments": args.max_repeated_segments,
        "fetch.user_agent": args.user_agent,
        "robots.obey": False if args.ignore_robots else None,
        "progress": False if args.no_progress else None,
        "pin_cpu": args.pin_cpu,
        "fetch.source_address": args.source_address,
    }
    from webgather.commands.recrawl import recrawl_cli

    cli.update(recrawl_cli(args))
    cli["cluster.n_buckets"] = getattr(args, "buckets", None)
    cli["cluster.partition_by"] = getattr(args, "partition_by", None)
    landmarks = getattr(args, "gnp_landmark", None)
    cli["cluster.gnp_landmarks"] = tuple(landmarks) if landmarks else None
    cli["cluster.gnp_k"] = getattr(args, "gnp_k", None)
    return load(args.config, None, cli)


def run_main_job(config: CrawlConfig, seeds: list[str]) -> dict[str, Any]:
    """Run a single-node crawl under uvloop; returns the summary."""
    import uvloop

    from webgather.runtime.crawl import run_crawl

    return uvloop.run(run_crawl(config, seeds, progress=config.progress and sys.stderr.isatty()))


_RECRAWL_FLAGS = (("cycle", "--cycle"), ("policy", "--policy"), ("budget", "--budget"), ("new_share", "--new-share"),
                  ("no_conditional", "--no-conditional"), ("no_dedup", "--no-dedup"), ("max_cycles", "--max-cycles"))


def check_combinations(args: argparse.Namespace) -> None:
    """One-line errors for options that would otherwise be silently ignored."""
    given = [flag for name, flag in _RECRAWL_FLAGS if getattr(args, name, None) not in (None, False)]
    if given and not getattr(args, "continuous", False):
        raise ConfigError(f"{', '.join(given)} only apply to re-crawl cycles: add --continuous "
                          "(or run webgather recrawl DIR on a finished crawl)")
    if getattr(args, "continuous", False) and args.max_pages is not None:
        raise ConfigError("--max-pages does not apply to --continuous: use --budget (page fetches per cycle)")
    if getattr(args, "node_id", None) and getattr(args, "workers", None):
        raise ConfigError("--node-id names this process as a node of a --redis crawl; --workers names its workers w0..")
    if (getattr(args, "gnp_landmark", None) or getattr(args, "gnp_k", None)) and getattr(args, "partition_by", None) != "gnp":
        raise ConfigError("--gnp-landmark and --gnp-k only apply to --partition-by gnp")
    if getattr(args, "source_address", None) and getattr(args, "workers", None):
        raise ConfigError("--source-address is one node's address; with several nodes start each with "
                          "webgather node --source-address ADDRESS")


def _main(args: argparse.Namespace) -> int:
    check_combinations(args)
    config = config_from_args(args)
    seeds = read_seeds(args.seeds)
    if getattr(args, "workers", None) or getattr(args, "redis", None):
        from webgather.commands.node import run_cluster_main

        return run_cluster_main(args, config, seeds)
    if getattr(args, "continuous", False):
        from webgather.commands.recrawl import run_continuous_main

        return run_continuous_main(config, seeds, args.max_cycles)
    summary = run_main_job(config, seeds)
    print_summary(summary)
    return 0


def print_summary(summary: dict[str, Any]) -> None:
    status = ", ".join(f"{k}: {v}" for k, v in summary.get("status", {}).items())
    errors = ", ".join(f"{k}: {v}" for k, v in summary.get("errors", {}).items()) or "none"
    print(
        f"pages {summary['pages']}  in {summary['wall_s']} s  ({summary['pages_per_s']} pages/s, "
        f"{summary['cpu_ms_per_page']} ms CPU/page, peak RSS {summary['peak_rss_mib']} MiB)\n"
        f"status  {status}\nerrors  {errors}\n"
        f"robots.txt fetches {summary['robots_fetches']}, retries {summary['retries']}, "
        f"links found {summary['links_found']}, new URLs {summary['urls_new']}\n"
        f"finished: {summary['finished']}   (summary.json and WARC files in the output directory)"
    )
    if summary.get("print_json"):
        print(json.dumps(summary, indent=2))
