"""``webgather cluster status --redis URL --crawl NAME``: nodes, buckets, pages/s, queues, traffic, balance.

Reads only what the nodes publish (heartbeat info, bucket table, counters);
changes nothing. ``--json`` prints the raw records instead of the table.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from webgather.exitcodes import ExitCode

__all__ = ["register"]


def register(sub: Any) -> None:
    parser = sub.add_parser("cluster", help="look at a cluster crawl")
    cmds = parser.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND", required=True)
    status = cmds.add_parser("status", help="nodes, buckets owned, pages/s, queues, cross-URL traffic, load balance")
    from webgather.commands.redis_url import add_crawl_in_redis_options

    add_crawl_in_redis_options(status)
    status.add_argument("--json", action="store_true", help="print members, table and counters as JSON")
    status.set_defaults(func=_status)


def _status(args: argparse.Namespace) -> int:
    import uvloop

    from webgather.commands.redis_url import resolve_redis_url
    from webgather.config import REDIS_URL_ENV
    from webgather.errors import ConfigError

    if resolve_redis_url(args, use_env=True) is None:
        raise ConfigError(f"cluster status needs the crawl's Redis: --redis URL, --redis-file PATH or {REDIS_URL_ENV}")

    print(uvloop.run(_gather(args)))
    return ExitCode.DONE


async def _gather(args: argparse.Namespace) -> str:
    from webgather.cluster.mapping import MAX_BUCKETS
    from webgather.cluster.redis import RedisBackend
    from webgather.cluster.status import status_text

    backend = await RedisBackend.connect(args.redis, args.crawl, MAX_BUCKETS)
    try:
        coordinator = backend.coordinator()
        members, table, counters = await coordinator.members(), await coordinator.get_table(), await coordinator.counters()
        holder = await coordinator.lease_holder()
    finally:
        await backend.aclose()
    if args.json:
        return json.dumps({"members": members, "table": table.shares() if table else None, "coordinator": holder,
                           "version": table.version if table else None, "counters": counters}, indent=2)
    return status_text(members, table, counters, args.crawl, holder)
