"""``webgather node --redis URL --crawl NAME --out DIR``: join a cluster crawl as one node.

The node takes the crawl's settings from its stored definition (only the
per-node ones come from this command line), writes under
``DIR/nodes/<node id>/``, and runs until the crawl is over. SIGTERM: leave
gracefully (hand every bucket over to the others first). SIGINT: stop at once
keeping the state (the others recover its buckets after ``member_ttl_s``).

In a continuous re-crawl (``crawl --continuous`` with ``--redis``/``--workers``)
the node stays after a cycle ends and takes part in the next one when it
starts (``--once``: end with the cycle; what the ``--workers`` parent starts,
since it starts new workers for every cycle). A signal while waiting ends it.

:func:`run_cluster_main` is what ``webgather crawl`` runs with ``--workers``
or ``--redis``.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any

from webgather.cluster._common import check_node
from webgather.commands.options import add_metrics_option
from webgather.commands.redis_url import add_redis_file_option, resolve_redis_url
from webgather.config import REDIS_URL_ENV, CrawlConfig
from webgather.errors import BackendUnavailable, ClusterError, ConfigError, StoreError
from webgather.exitcodes import MEANINGS, ExitCode, help_epilog
from webgather.logs import add_log_options
from webgather.store.outdir import prepare_out_dir

__all__ = ["connect_crawl", "default_node_id", "register", "run_cluster_main"]


def register(sub: Any) -> None:
    parser = sub.add_parser("node", help="join a cluster crawl (webgather crawl ... --redis URL --crawl NAME)",
                               epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--redis", default=None, help="Redis URL of the crawl (redis://, rediss:// or unix://), or @FILE holding it "
        "(default: WEBGATHER_REDIS_URL)")
    add_redis_file_option(parser)
    add("--crawl", required=True, help="name of the crawl to join")
    add("--out", default="crawl-out", help="output directory; this node writes under OUT/nodes/<node id>/")
    add("--node-id", default=None, help="this node's id (default: host name and process id)")
    add("--buckets", type=int, default=None, help="M; refused if it differs from the crawl's")
    add("--shared-store", default=None, metavar="URL",
        help="the crawl's shared store (refused if it differs from the crawl's): with it, a node that finds no "
             "crawl of the name in Redis tells a Redis that lost the crawl's data (exit 6) from a crawl never "
             "started (exit 2); default: WEBGATHER_CLUSTER__SHARED_STORE")
    add("--config", default=None, metavar="FILE",
        help="TOML file of this node's own settings (fetch.concurrency, pin_cpu, fetch.source_address, metrics, "
             "fetch.proxy, hooks.items), under WEBGATHER_* and the flags; the crawl's other settings are its "
             "stored definition's")
    add("--concurrency", type=int, default=None,
        help="requests in flight at this node, robots.txt included (per node; setting fetch.concurrency)")
    add("--no-progress", action="store_true", help="accepted for symmetry with crawl; a node prints no progress")
    add("--pin-cpu", default=None, help='keep this node on one CPU: "auto" (default), "off", or a CPU index')
    add("--once", action="store_true", help="in a continuous re-crawl: end when the current cycle ends")
    add("--source-address", default=None, help="local IP address this node's connections come from")
    add("--proxy", default=None, metavar="URL",
        help='this node\'s HTTP proxy, over the crawl\'s (http://[user:password@]host:port or "direct"; '
             "default: the crawl's, else HTTP_PROXY/HTTPS_PROXY/NO_PROXY)")
    add("--items", default=None, metavar="PATH",
        help="where this node's hook items go, over the crawl's: .jsonl or .parquet; the node writes "
             "<stem>-<node id><suffix> in its node directory")
    add_metrics_option(parser)
    add_log_options(parser)
    parser.set_defaults(func=_main)


def default_node_id() -> str:
    return f"{socket.gethostname().split('.')[0] or 'node'}-{os.getpid()}"


def _main(args: argparse.Namespace) -> int:
    import uvloop

    if resolve_redis_url(args, use_env=True) is None:
        raise ConfigError(f"node needs the crawl's Redis: --redis URL, --redis-file PATH or {REDIS_URL_ENV}")
    args.node_id = check_node(args.node_id or default_node_id())  # before any directory or connection
    if args.items is not None:
        from webgather.runtime.engine.item_sinks import check_items_format

        check_items_format(args.items)
    prepare_out_dir(args.out)
    summary = uvloop.run(_join_and_run(args))
    print(f"node {summary['node']}: {summary['pages']} pages in {summary['wall_s']} s "
          f"({summary['pages_per_s']} pages/s), ended: {summary['end']}")
    return _exit_code(summary)


def _exit_code(summary: dict[str, Any]) -> int:
    """:func:`~webgather.commands.report.exit_code` of this node's summary (:mod:`webgather.exitcodes`)."""
    from webgather.commands.report import exit_code

    return exit_code(summary, resume="run the same command to take part again; its state is kept")


def _workers_exit_code(summary: dict[str, Any]) -> int:
    """As one node's (:func:`~webgather.commands.report.exit_code`; a cycle's: ``cycle_exit_code``), and
    NOT_ENDED for a crawl that did not end (a worker died or stopped); a crawl its ``--max-pages`` ended
    (every node ``done``) is DONE, as on one node."""
    from webgather.commands.report import cycle_exit_code, exit_code

    ended = summary["finished"] or all(node.get("end") == "done" for node in summary.get("nodes", {}).values())
    if not ended:
        return exit_code(summary) or _workers_failure(summary.get("exit_codes") or {}) or ExitCode.NOT_ENDED
    return cycle_exit_code(summary) if summary.get("recrawl") else exit_code(summary)


def _workers_failure(codes: dict[str, int]) -> int:
    """A worker's own reason to stop (a failed write, a backend or store it could not go on without) is the
    crawl's, so ``--workers`` tells what one node would (one line naming the workers); 0 if none had one."""
    from webgather.commands.report import exit_line

    for reason in (ExitCode.WRITE_FAILED, ExitCode.CANNOT_CONTINUE):
        workers = sorted(node for node, code in codes.items() if code == reason)
        if workers:
            exit_line(f"webgather: error: worker {', '.join(workers)} stopped with exit {int(reason)} "
                      f"({MEANINGS[reason].split(':')[0]}); its node.log says why")
            return reason
    return 0


async def connect_crawl(url: str, crawl: str, n_buckets: int | None) -> Any:
    """A backend on the crawl named ``crawl`` in ``url``, with its stored number of buckets unless ``n_buckets``."""
    from webgather.cluster import definition
    from webgather.cluster.mapping import DEFAULT_BUCKETS
    from webgather.cluster.redis import RedisBackend

    backend = await RedisBackend.connect(url, crawl, n_buckets or DEFAULT_BUCKETS)
    try:
        found = await definition.read(backend)
    except BaseException:
        await backend.aclose()
        raise
    if found is not None and n_buckets is None and found.n_buckets != backend.n_buckets:
        await backend.aclose()
        backend = await RedisBackend.connect(url, crawl, found.n_buckets)
    return backend


async def _connect_and_join(args: argparse.Namespace) -> tuple[Any, Any]:
    """The backend and the crawl's definition, for this node: retried while Redis is unreachable for up to
    ``max_outage_s`` (the crawl's definition kept in this node's ``--out``, else ``WEBGATHER_*`` and the
    defaults), then CannotContinue (exit 6). A crawl Redis does not know is judged by ``join_crawl`` with this
    node's state and the crawl's shared store (``--shared-store``, else the crawl's or ``WEBGATHER_*``'s)."""
    from webgather.cluster.definition import read, read_saved
    from webgather.cluster.patience import within_outage
    from webgather.cluster.redis import check_url
    from webgather.config import load
    from webgather.runtime.launch.cluster import join_crawl

    check_url(args.redis)  # a malformed URL is a bad command line at once, not an outage
    saved = read_saved(args.out)
    base = (saved.crawl_config() if saved is not None else load()).cluster
    patience, store_url = base.max_outage_s, args.shared_store or base.shared_store
    # the crawl existed for this node: its --out holds the crawl's state, or a try below saw its definition
    known = saved is not None or (Path(args.out) / "nodes" / args.node_id / "state").is_dir()

    async def step() -> tuple[Any, Any]:
        nonlocal known
        backend = await connect_crawl(args.redis, args.crawl, args.buckets)
        try:
            known = known or await read(backend) is not None
            return backend, await join_crawl(backend, n_buckets=args.buckets, has_state=known, store_url=store_url)
        except BaseException:
            await backend.aclose()
            raise

    return await within_outage(step, node=args.node_id, max_outage_s=patience, retry=(BackendUnavailable, StoreError))


def _local(args: argparse.Namespace) -> dict[str, Any]:
    """This node's settings from its layers: ``--config``, ``WEBGATHER_*``, its flags (config.local)."""
    from webgather.config.local import local_layers

    return local_layers(args.config, None, {
        "fetch.concurrency": args.concurrency, "pin_cpu": args.pin_cpu, "fetch.source_address": args.source_address,
        "metrics": args.metrics, "fetch.proxy": args.proxy, "hooks.items": args.items})


async def _join_and_run(args: argparse.Namespace) -> dict[str, Any]:
    from webgather.runtime.launch.cluster import current_cycle, join_crawl
    from webgather.runtime.launch.start import launch_node

    node_id, local = args.node_id, _local(args)
    backend, found = await _connect_and_join(args)
    try:
        while True:
            summary = await launch_node(backend, found, local, node_id=node_id, out=Path(args.out))
            spec = await current_cycle(backend)
            if args.once or summary["end"] != "done" or spec is None or not spec.continuous:
                return summary
            print(f"node {node_id}: cycle {spec.cycle} done ({summary['pages']} pages); waiting for the next one",
                  flush=True)
            if not await _next_run(backend):
                return summary
            found = await join_crawl(backend, n_buckets=args.buckets)
    finally:
        await backend.aclose()


async def _next_run(backend: Any, poll_s: float = 1.0) -> bool:
    """Wait until the crawl's next run (cycle) starts; False if a signal came first."""
    import asyncio

    from webgather.runtime.engine.signals import crawl_signals

    stop = asyncio.Event()
    coordinator = backend.coordinator()
    with crawl_signals(stop.set, stop.set):
        while not stop.is_set():
            counters = await coordinator.counters()
            if counters.get("runs", 0) > counters.get("done", 0):
                return True
            try:
                await asyncio.wait_for(stop.wait(), poll_s)
            except TimeoutError:
                pass
    return False


def run_cluster_main(args: argparse.Namespace, config: CrawlConfig, seeds: list[str]) -> int:
    """``webgather crawl`` with ``--workers`` (local node processes) or ``--redis`` (this process is a node)."""
    from webgather.commands.report import print_cluster_summary
    from webgather.runtime.launch.workers import Cycles, run_workers

    continuous = bool(getattr(args, "continuous", False))
    if continuous and not args.workers:
        raise ClusterError("--continuous with --redis needs --workers N (the parent starts each cycle); "
                           "other machines join with webgather node")
    if args.workers:
        extra = ["--concurrency", str(config.fetch.concurrency)]  # its layers' (file, env, flag): per node
        if continuous:
            from webgather.commands.report import print_cycle

            cycles = Cycles(continuous=True, max_cycles=args.max_cycles, on_cycle=print_cycle)
            summary = run_workers(config, seeds, workers=args.workers, redis_url=args.redis, crawl=args.crawl,
                                  node_args=extra, cycles=cycles)
            return _workers_exit_code(summary)
        summary = run_workers(config, seeds, workers=args.workers, redis_url=args.redis, crawl=args.crawl,
                              node_args=extra)
        print_cluster_summary(summary)
        return _workers_exit_code(summary)
    if not args.crawl:
        raise ClusterError("--redis needs --crawl NAME (the name other nodes join)")
    import uvloop

    summary = uvloop.run(_start_and_run(args, config, seeds))
    print(f"node {summary['node']}: {summary['pages']} pages in {summary['wall_s']} s, ended: {summary['end']}",
          file=sys.stdout)
    return _exit_code(summary)


async def _start_and_run(args: argparse.Namespace, config: CrawlConfig, seeds: list[str]) -> dict[str, Any]:
    from webgather.cluster.patience import within_outage
    from webgather.cluster.redis import RedisBackend, check_url
    from webgather.config.local import local_of
    from webgather.runtime.launch.cluster import start_crawl
    from webgather.runtime.launch.start import launch_node

    node = args.node_id or default_node_id()
    check_url(args.redis)  # a malformed URL is a bad command line at once, not an outage
    has_state = (Path(config.out_dir) / "nodes" / node / "state").is_dir()  # restarted: Redis must know the crawl

    async def step() -> tuple[RedisBackend, Any]:
        backend = await RedisBackend.connect(args.redis, args.crawl, config.cluster.n_buckets)
        try:
            return backend, await start_crawl(backend, config, seeds, nodes=[node], has_state=has_state)
        except BaseException:
            await backend.aclose()
            raise

    backend, found = await within_outage(step, node=node, max_outage_s=config.cluster.max_outage_s)
    try:
        return await launch_node(backend, found, local_of(config), node_id=node, out=Path(config.out_dir))
    finally:
        await backend.aclose()
