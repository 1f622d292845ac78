"""The command line's crawl, cluster and re-crawl options, and the config they make.

Shared by ``crawl``, ``recrawl`` and ``node`` (each command module imports this one,
none imports another for its options). Options map one-to-one onto config fields
(see :mod:`webgather.config`); a ``--config FILE`` (TOML) and ``WEBGATHER_*``
variables sit below them.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from webgather.cluster.definition import CrawlDefinition, read_saved
from webgather.commands.flag_settings import flag_of, show_setting_defaults, with_flag
from webgather.commands.redis_url import add_redis_file_option
from webgather.config import CrawlConfig, layers, load
from webgather.config.listen import listen_address
from webgather.errors import ConfigError
from webgather.logs import add_log_options

__all__ = [
    "add_cluster_options", "add_crawl_options", "add_metrics_option", "add_recrawl_options", "add_render_options",
    "add_scope_rule_options",
    "check_combinations", "check_counts", "cli_settings", "config_from_args", "parse_duration", "recrawl_cli",
]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``6h``, ``1.5d`` or ``1w``."""
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 90s, 30m, 6h, 1d)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """``--workers N`` / ``--redis URL --crawl NAME``: a cluster crawl (see webgather.runtime.launch.workers)."""
    add = parser.add_argument
    add("--workers", type=int, default=None, help="crawl with N node processes on this machine")
    add("--redis", default=None, help="Redis URL of a cluster crawl, or @FILE holding it (default: WEBGATHER_REDIS_URL "
        "if --crawl is given, else with --workers an embedded one under --out)")
    add("--crawl", default=None, help="name of the cluster crawl in that Redis (other nodes join it by name)")
    add("--buckets", type=int, default=None, help="M of the two-stage mapping (fixed per crawl)")
    add("--partition-by", choices=["host", "ip", "gnp"], default=None,
        help="partition hosts over nodes by host, or by address (as first resolved; per-IP caps hold cluster-wide), "
             "or by GNP distance (a host goes to one of its K nearest nodes)")
    add("--gnp-landmark", action="append", default=None, metavar="URL",
        help="with --partition-by gnp: a small page every node httppings to place itself (repeat, at least 2)")
    add("--gnp-k", type=int, default=None, help="with --partition-by gnp: one of the K nearest nodes")
    add("--node-id", default=None, help="with --redis and no --workers: this node's id")
    add("--shared-store", default=None, metavar="URL",
        help="file:///path or s3://bucket/prefix: closed WARCs and bucket checkpoints go there, so that a "
             "lost node and its disk lose nothing (part of the crawl's definition: nodes need not repeat it)")
    add_redis_file_option(parser)
    show_setting_defaults(parser)


def add_crawl_options(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--out", default=None, help="output directory (WARC, logs, state)")
    add("--config", default=None, help="TOML config file")
    add("--resolve", default=None, help='static "host address" map: resolve once, keep in a file')
    add("--max-pages", type=int, default=None, help="stop after this many pages")
    add("--delay", type=float, default=None, help="minimum seconds between requests to one host")
    add("--concurrency", type=int, default=None,
        help="requests in flight at each node, robots.txt included (with --workers N: at each of the N)")
    add("--per-ip", type=int, default=None, help="concurrent requests per IP address")
    add("--scope", choices=["seed-hosts", "domains", "any"], default=None, help="which hosts to follow")
    add("--domain", action="append", default=None, help="with --scope domains: a domain to crawl (repeatable)")
    add("--max-depth", type=int, default=None, help="link hops from a seed")
    add("--max-pages-per-host", type=int, default=None)
    add("--max-url-length", type=int, default=None)
    add("--max-repeated-segments", type=int, default=None, help="trap guard: a path segment repeated more times is skipped")
    add("--no-requisites", action="store_true", help="pages only: no images, stylesheets, scripts or fonts")
    add("--user-agent", default=None, help="User-Agent with a contact URL")
    add("--ignore-robots", action="store_true", help="do not fetch or obey robots.txt (only for servers you own)")
    add("--no-progress", action="store_true", help="no live progress display")
    add("--pin-cpu", default=None, help='keep the node on one CPU: "auto", "off", or a CPU index')
    add_network_options(parser)
    add_scope_rule_options(parser)
    add_render_options(parser)
    add_metrics_option(parser)
    add("--hooks", default=None, metavar="MODULE",
        help="page hooks: import path (pkg.mod, on PYTHONPATH) of a module defining on_page(page) and/or "
             "on_link(url); its items go to OUT/items.jsonl, or --items (every node of a cluster loads it)")
    add("--items", default=None, metavar="PATH",
        help="write the hooks' items to PATH: .jsonl (JSON Lines) or .parquet (Parquet part files, needs pyarrow); "
             "in a cluster each node writes <stem>-<node id><suffix> in its node directory")
    add_log_options(parser)
    show_setting_defaults(parser)


def add_network_options(parser: argparse.ArgumentParser) -> None:
    """Where the node's connections may go and come from: private networks, source address, proxies."""
    add = parser.add_argument
    add("--allow-address", action="append", default=None, metavar="CIDR",
        help="connect to this private network even so (repeatable; e.g. 127.0.0.0/8 for a testweb on loopback)")
    add("--source-address", default=None, help="local IP address this node's connections come from")
    add("--proxy", default=None, metavar="URL",
        help='HTTP proxy http://[user:password@]host:port, or "direct"; unset: [fetch] proxy, else '
             "HTTP_PROXY/HTTPS_PROXY/NO_PROXY; credentials are safer in WEBGATHER_FETCH__PROXY than in argv")
    add("--proxy-rule", action="append", default=None, metavar="'PATTERN PROXY'",
        help='hosts matching the glob PATTERN go through PROXY (a URL or "direct"); first match wins, '
             "before --proxy (repeatable)")


def add_scope_rule_options(parser: argparse.ArgumentParser) -> None:
    """``--include``/``--exclude`` REGEX, ``--include-surt``/``--exclude-surt`` PREFIX, ``--strip-param`` NAME."""
    add = parser.add_argument
    add("--include", action="append", default=None, metavar="REGEX",
        help="follow only URLs this regex (or an --include-surt prefix) matches, searched in the canonical URL (repeatable)")
    add("--exclude", action="append", default=None, metavar="REGEX",
        help="do not follow URLs this regex matches; wins over --include (repeatable)")
    add("--include-surt", action="append", default=None, metavar="PREFIX",
        help="follow only URLs under this SURT prefix, e.g. 'http://(com,example,)/shop/' (repeatable)")
    add("--exclude-surt", action="append", default=None, metavar="PREFIX",
        help="do not follow URLs under this SURT prefix (repeatable)")
    add("--strip-param", action="append", default=None, metavar="NAME",
        help="drop query arguments of this name or glob (e.g. sessionid, 'utm_*'; case-insensitive) from every URL "
             "(repeatable)")


def add_render_options(parser: argparse.ArgumentParser) -> None:
    """``--render`` REGEX, ``--render-surt`` PREFIX: pages rendered in headless Chromium (``[render]``)."""
    parser.add_argument("--render", action="append", default=None, metavar="REGEX",
                        help="render pages whose URL this regex matches in headless Chromium and take their links "
                             "from the rendered DOM (needs the render extra; repeatable)")
    parser.add_argument("--render-surt", action="append", default=None, metavar="PREFIX",
                        help="render pages under this SURT prefix, e.g. 'http://(com,example,)/' (repeatable)")


def add_metrics_option(parser: argparse.ArgumentParser) -> None:
    """``--metrics ADDR:PORT``: the node's Prometheus endpoint (``metrics`` in the config)."""
    parser.add_argument("--metrics", type=_listen, default=None, metavar="ADDR:PORT",
                        help="serve Prometheus metrics at http://ADDR:PORT/metrics (a bare PORT: 127.0.0.1; "
                        "0: a free port, logged at INFO); with --workers N, worker K on PORT+K")


def _listen(text: str) -> str:
    if listen_address(text) is None:
        raise argparse.ArgumentTypeError(f"not PORT or ADDR:PORT with an IP address and a port in 0..65535: {text!r} "
                                         "(e.g. 9100, 127.0.0.1:9100, [::1]:9100)")
    return text


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
    show_setting_defaults(parser)


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


def config_from_args(args: argparse.Namespace) -> CrawlConfig:
    """The config of ``--config``, ``WEBGATHER_*`` and the flags; an error names the flag that set a bad value.
    Over a crawl that ``--out`` already holds, its stored settings (:func:`over_stored`)."""
    cli = cli_settings(args)
    try:
        config = load(args.config, None, cli)
        stored = read_saved(config.out_dir)
        if stored is not None:
            config = over_stored(stored, layers(args.config, None, cli), config.out_dir)
    except ConfigError as exc:
        raise ConfigError(with_flag(str(exc), cli)) from None
    if config.hooks.module:  # a module that cannot be imported: one line now, not in each node later
        from webgather.runtime.engine.page_hooks import load_hooks

        load_hooks(config.hooks.module)
    if config.hooks.items:  # Parquet without pyarrow: one line now, not a crawl that stops at its first item
        from webgather.runtime.engine.item_sinks import check_items_format

        check_items_format(config.hooks.items)
    if config.render.include or config.render.include_surt:  # no Playwright or no browser: one line now
        from webgather.fetch.render import check_available

        check_available(config.render.browser_path)
    return config


RESUMABLE = frozenset({"max_pages"})
"""Settings of a crawl's definition that each run gives anew (a resume without ``--max-pages`` has no
limit, a higher one continues the crawl); its node settings (``config.local``) and re-crawl settings are
not in the definition, and change freely too."""


def over_stored(stored: CrawlDefinition, given: list[tuple[str, dict[str, Any]]], out: str) -> CrawlConfig:
    """The crawl's stored settings with those ``given`` (the layers over the defaults) that may change;
    one that may not and differs is refused in one line (start a new crawl to change it)."""
    values: dict[str, Any] = {k: v for k, v in stored.config.items() if k not in RESUMABLE}
    values["seeds"] = list(stored.seeds)
    for _source, layer in given:
        values.update(layer)
    config = load(None, {}, values)
    changed = [key for key in CrawlDefinition.of(config, stored.seeds, stored.epoch).differences(stored)
               if key not in RESUMABLE]
    if changed:
        told = "; ".join(f"{_named(key)} {stored.config.get(key)!r}, not {values.get(key)!r}" for key in changed)
        raise ConfigError(f"the crawl in {out} keeps the settings it started with: {told} (what may change on a "
                          "resume or recrawl: --max-pages, per-node and re-crawl settings; "
                          "start a new crawl in another --out for others)")
    return config


def _named(key: str) -> str:
    flag = flag_of(key)
    return f"{key} ({flag})" if flag else key


def cli_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (dotted name -> value; None: not given)."""
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
        "scope.requisites": False if getattr(args, "no_requisites", False) else None,
        "progress": False if args.no_progress else None,
        "pin_cpu": args.pin_cpu,
        "fetch.allow_addresses": tuple(args.allow_address) if args.allow_address else None,
        "fetch.source_address": args.source_address,
        "metrics": getattr(args, "metrics", None),
        "fetch.proxy": getattr(args, "proxy", None),
        "fetch.proxy_rules": tuple(args.proxy_rule) if getattr(args, "proxy_rule", None) else None,
        "hooks.module": getattr(args, "hooks", None),
        "hooks.items": getattr(args, "items", None),
    }
    for flag, key in _SCOPE_RULE_FLAGS:
        given = getattr(args, flag, None)
        cli[key] = tuple(given) if given else None
    cli.update(recrawl_cli(args))
    cli["cluster.n_buckets"] = getattr(args, "buckets", None)
    cli["cluster.partition_by"] = getattr(args, "partition_by", None)
    landmarks = getattr(args, "gnp_landmark", None)
    cli["cluster.gnp_landmarks"] = tuple(landmarks) if landmarks else None
    cli["cluster.gnp_k"] = getattr(args, "gnp_k", None)
    cli["cluster.shared_store"] = getattr(args, "shared_store", None)
    return cli


_SCOPE_RULE_FLAGS = (("include", "scope.include"), ("exclude", "scope.exclude"), ("include_surt", "scope.include_surt"),
                     ("exclude_surt", "scope.exclude_surt"), ("strip_param", "scope.strip_query_params"),
                     ("render", "render.include"), ("render_surt", "render.include_surt"))


_RECRAWL_FLAGS = (("cycle", "--cycle"), ("policy", "--policy"), ("budget", "--budget"), ("new_share", "--new-share"),
                  ("no_conditional", "--no-conditional"), ("no_dedup", "--no-dedup"), ("max_cycles", "--max-cycles"))


def check_combinations(args: argparse.Namespace) -> None:
    """One-line errors for options that would otherwise be silently ignored."""
    check_counts(args)
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
    if getattr(args, "shared_store", None) and not (getattr(args, "workers", None) or getattr(args, "redis", None)):
        raise ConfigError("--shared-store applies to a cluster crawl: add --workers N or --redis URL --crawl NAME")


_COUNT_FLAGS = (("workers", "--workers"), ("max_cycles", "--max-cycles"))


def check_counts(args: argparse.Namespace) -> None:
    """Counts that are not settings but must be >= 1: ``--workers 0`` would otherwise quietly mean one node."""
    for name, flag in _COUNT_FLAGS:
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be at least 1, not {value}")
