"""``webgather status serve --redis URL --crawl NAME``: a status page of a cluster crawl over HTTP.

The page (``/``) shows the nodes (alive, idle, pages, pages/s, buckets owned),
the bucket table's version, pages/s over time, load variance, errors by kind,
the busiest hosts and any lost buckets; ``/status.json`` has the same figures.
It reads only what the nodes publish, like ``webgather cluster status``, and
listens on 127.0.0.1 unless ``--host`` says otherwise. Ctrl-C or SIGTERM stops it.
Once the crawl has ended, the page shows its last state from the summaries in
its directory (``--dir``; found by itself for a ``--workers`` crawl).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
from typing import Any

__all__ = ["DEFAULT_PORT", "register"]

DEFAULT_PORT = 8470


def register(sub: Any) -> None:
    parser = sub.add_parser("status", help="a status page of a cluster crawl")
    cmds = parser.add_subparsers(dest="status_command", metavar="SUBCOMMAND", required=True)
    serve = cmds.add_parser("serve", help="serve a status page (HTML, auto-refreshing; and /status.json)")
    from webgather.commands.redis_url import add_crawl_in_redis_options

    add_crawl_in_redis_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on, 0 for any free port (default: %(default)s)")
    serve.add_argument("--dir", default=None, metavar="DIR",
                       help="the crawl's directory (its --out): once the crawl has ended (its Redis stopped, its "
                            "nodes gone) the page shows its last state from the summaries there (default: for a "
                            "--workers crawl's unix://DIR/redis/redis.sock, DIR)")
    serve.add_argument("--refresh-s", type=float, default=5.0, help="seconds between the page's reloads (default: %(default)s)")
    from webgather.logs import add_log_options

    add_log_options(serve)
    serve.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvloop

    from webgather.commands.redis_url import resolve_redis_url
    from webgather.config import REDIS_URL_ENV
    from webgather.errors import ConfigError

    if resolve_redis_url(args, use_env=True) is None:
        raise ConfigError(f"status serve needs the crawl's Redis: --redis URL, --redis-file PATH or {REDIS_URL_ENV}")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {args.port}")
    if not (math.isfinite(args.refresh_s) and args.refresh_s >= 1):
        raise ConfigError(f"--refresh-s must be at least 1, got {args.refresh_s:g}")
    uvloop.run(_run(args))
    return 0


async def _run(args: argparse.Namespace) -> None:
    from webgather.runtime.metrics.status_server import StatusServer, open_reader

    from pathlib import Path

    reader = await open_reader(args.redis, args.crawl, Path(args.dir) if args.dir else None)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with StatusServer(reader, args.host, args.port, args.refresh_s) as server:
            print(f"status of crawl {args.crawl} at {server.url} (Ctrl-C stops)", flush=True)
            await stop.wait()
    finally:
        await reader.aclose()
