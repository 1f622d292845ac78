"""``webgather simulate partition|crawl|cache|order|gnp``: the documents' experiments.

Each experiment loads a link graph (``--graph testweb:HOSTS:SEED`` builds the
synthetic web without HTTP; ``--crawl DIR`` reads a crawl's link logs), runs the
pure simulator in :mod:`webgather.sim`, prints its table(s) and, with ``--out
DIR``, writes ``DIR/<experiment>.txt`` and ``DIR/<experiment>*.png`` (matplotlib,
Agg backend, no display needed). Wall times are logged (INFO, on stderr by default).

This module is the IO shell: it reads files, the clock (through
:class:`webgather.clock.SystemClock`) and writes output; the simulator
itself is pure and seeded. OpenBLAS is held to one thread while simulating: on a
small shared machine its worker threads oversubscribe the cores and made the
GNP fits 10-20x slower.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from webgather.errors import ConfigError
from webgather.linkgraph import LinkGraph
from webgather.clock import SystemClock
from webgather.sim.traces import crawl_order, crawl_seeds, default_seeds

__all__ = ["load_graph", "register"]

log = logging.getLogger(__name__)

EXPERIMENTS = ("partition", "crawl", "cache", "order", "gnp")


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one integer")
    return values


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def register(sub: Any) -> None:
    parser = sub.add_parser("simulate", help="reproduce the documents' experiments on a link graph")
    actions = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name, helptext, options in (
        ("partition", "partition strategies: load variance, cross-URL traffic, URLs moved", _partition_options),
        ("crawl", "discrete-event simulation: pages over time, speed-up vs one node", _crawl_options),
        ("cache", "URL-cache policies: miss rate vs cache size", _cache_options),
        ("order", "crawl orderings: PageRank collected vs pages fetched", _order_options),
        ("gnp", "GNP accuracy and Random/Top1/Top3 site assignment", _gnp_options),
    ):
        p = actions.add_parser(name, help=helptext)
        default_graph = "testweb:203:1" if name == "gnp" else "testweb:1000:1"
        p.add_argument("--graph", default=default_graph,
                       help=f"testweb:HOSTS:SEED[:PAGES_PER_HOST] (default {default_graph})")
        p.add_argument("--crawl", metavar="DIR", help="use the link logs of a crawl directory instead")
        p.add_argument("--out", metavar="DIR", help="write <experiment>.txt and PNG plots here")
        p.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
        options(p)
        p.set_defaults(func=_run)


def _partition_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", type=_ints, default=[2, 4, 8, 16, 32, 64])
    p.add_argument("--strategies", type=_names, default=None, help="comma list (default: all)")
    p.add_argument("--buckets", type=int, default=4096, help="M for two-stage (default 4096)")
    p.add_argument("--vnodes", type=int, default=100, help="virtual nodes per node (consistent)")
    p.add_argument("--batch-urls", type=int, default=100, help="cross URLs per message")
    p.add_argument("--intervals", type=int, default=10, help="crawl-order intervals ('hours')")
    p.add_argument("--resolve", metavar="FILE", help="'host address' lines for ip-sum")


def _crawl_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nodes", type=_ints, default=[1, 2, 4, 8, 16])
    p.add_argument("--concurrency", type=int, default=16, help="fetch slots per node")
    p.add_argument("--bandwidth", type=float, default=1_000_000.0, help="bytes/s per node")
    p.add_argument("--politeness", type=float, default=2.0, help="seconds between fetches per host")
    p.add_argument("--latency", type=float, default=0.25, help="median server latency, seconds")
    p.add_argument("--cpu-per-page", type=float, default=0.004, help="node CPU seconds per page")
    p.add_argument("--batch-urls", type=int, default=100, help="R: URLs per cross-URL batch")
    p.add_argument("--batch-delay", type=float, default=1.0, help="T: seconds before a partial batch goes")
    p.add_argument("--horizon", type=float, default=None, help="T for speed-up (default: see docs)")
    p.add_argument("--seed-hosts", type=int, default=1, help="seed the front pages of this many hosts")


def _cache_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-log2", type=int, default=4, help="smallest cache 2^k (default 4)")
    p.add_argument("--max-log2", type=int, default=20, help="largest cache 2^k (default 20)")
    p.add_argument("--slow-step", type=int, default=2,
                   help="clairvoyant/clock/random every this many powers of two (default 2)")
    p.add_argument("--policies", type=_names, default=None, help="comma list (default: all)")
    p.add_argument("--trace-limit", type=int, default=None, help="use the first N references")


def _order_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--orders", type=_names, default=None, help="comma list (default: all)")
    p.add_argument("--batch", type=int, default=100, help="pages per step (the superstep's R)")
    p.add_argument("--seed-hosts", type=int, default=1, help="seed the front pages of this many hosts")


def _gnp_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--crawlers", type=int, default=30)
    p.add_argument("--cities", type=int, default=4)
    p.add_argument("--landmarks", type=_ints, default=[5, 7, 9, 11, 15])
    p.add_argument("--dims", type=_ints, default=[2, 3, 4, 5, 6, 7, 8])
    p.add_argument("--tol", type=float, default=0.2, help="relative error counted as accurate")
    p.add_argument("--sched-landmarks", type=int, default=9, help="landmarks for the scheduling run")
    p.add_argument("--sched-dims", type=int, default=7, help="dimensions for the scheduling run")
    p.add_argument("--concurrency", type=int, default=16, help="fetch slots per crawler")
    p.add_argument("--politeness", type=float, default=0.1, help="seconds between fetches per host")


def load_graph(spec: str, crawl_dir: str | None) -> LinkGraph:
    """The graph named by ``--graph`` or ``--crawl`` (a bad spec is a ConfigError)."""
    if crawl_dir:
        from webgather.store.graphread import read_link_graph

        return read_link_graph(Path(crawl_dir))
    parts = spec.split(":")
    if parts[0] != "testweb" or len(parts) not in (3, 4):
        raise ConfigError(f"--graph must be testweb:HOSTS:SEED[:PAGES_PER_HOST], got {spec!r}")
    try:
        hosts, seed = int(parts[1]), int(parts[2])
        per_host = float(parts[3]) if len(parts) == 4 else 100.0
    except ValueError:
        raise ConfigError(f"--graph numbers must be integers, got {spec!r}") from None
    from webgather.testweb import WebModel, WebParams

    return WebModel(WebParams(seed=seed, n_hosts=hosts, mean_pages_per_host=per_host)).link_graph()


def _run(args: argparse.Namespace) -> int:
    clock = SystemClock()
    start = clock.monotonic()
    graph = load_graph(args.graph, args.crawl)
    source = args.crawl or args.graph
    log.info(f"[{args.experiment}] {source}: {graph.n_pages:,} pages, {graph.n_links:,} links, "
             f"{graph.n_hosts:,} hosts (loaded in {clock.monotonic() - start:.1f} s)")
    runner = _RUNNERS[args.experiment]
    with threadpool_limits(limits=1, user_api="blas"):
        began = clock.monotonic()
        text, figures = runner(graph, args, clock.monotonic)
        took = clock.monotonic() - began
    print(text)
    log.info(f"[{args.experiment}] simulated in {took:.1f} s")
    if args.out:
        _save(Path(args.out), args.experiment, text, figures)
    return 0


Plotter = Callable[[Any], None]


def _save(out: Path, name: str, text: str, figures: dict[str, Plotter]) -> None:
    from matplotlib.figure import Figure

    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.txt").write_text(text + "\n", encoding="utf-8")
        for suffix, draw in figures.items():
            fig = Figure(figsize=(11, 4.5), layout="constrained")
            draw(fig)
            path = out / f"{name}{suffix}.png"
            fig.savefig(path, dpi=110)
            log.info(f"[{name}] wrote {path}")
    except OSError as exc:
        raise ConfigError(f"cannot write to {out}: {exc.strerror or exc}") from exc


Result = tuple[str, dict[str, Plotter]]


def _seeds(graph: LinkGraph, args: argparse.Namespace) -> list[int]:
    """A recorded crawl's own seeds, or the front pages of the first ``--seed-hosts`` hosts."""
    if args.crawl:
        return [int(p) for p in crawl_seeds(graph)]
    return [int(p) for p in default_seeds(graph, args.seed_hosts)]


def _partition(graph: LinkGraph, args: argparse.Namespace, timer: Callable[[], float]) -> Result:
    from webgather.sim import partition, reconfig

    resolve = None
    if args.resolve:
        from webgather.fetch.resolver import load_resolve_file

        resolve = load_resolve_file(args.resolve)
    strategies = args.strategies or list(partition.STRATEGIES)
    order = crawl_order(graph) if args.crawl else None
    result = partition.run(graph, args.nodes, strategies, n_buckets=args.buckets, vnodes=args.vnodes,
                           batch_urls=args.batch_urls, n_intervals=args.intervals, resolve=resolve,
                           order=order)
    keys = partition.keys_of(graph, resolve)
    rows = [row for n in args.nodes if n >= 2
            for row in reconfig.reconfigure(keys, n, n_buckets=args.buckets, vnodes=args.vnodes)]
    text = partition.table(result) + "\n\n" + reconfig.table(rows)
    return text, {"": lambda fig: partition.plot(result, fig),
                  "-moves": lambda fig: reconfig.plot(rows, fig)}


def _crawl(graph: LinkGraph, args: argparse.Namespace, timer: Callable[[], float]) -> Result:
    from webgather.sim import crawl
    from webgather.sim.des import CrawlParams

    params = CrawlParams(concurrency=args.concurrency, bandwidth_bytes_per_s=args.bandwidth,
                         politeness_s=args.politeness, latency_median_s=args.latency,
                         cpu_s_per_page=args.cpu_per_page, batch_urls=args.batch_urls,
                         batch_delay_s=args.batch_delay)
    seeds = _seeds(graph, args)
    result = crawl.run(graph, args.nodes, params, seed=args.seed, seeds=list(seeds), horizon_s=args.horizon)
    return crawl.table(result), {"": lambda fig: crawl.plot(result, fig)}


def _cache(graph: LinkGraph, args: argparse.Namespace, timer: Callable[[], float]) -> Result:
    from webgather.sim import cache
    from webgather.sim.traces import bfs_order, discovery_trace, link_log_trace

    if args.crawl:
        trace = link_log_trace(graph)  # the link log is already in crawl order
    else:
        trace = discovery_trace(graph, bfs_order(graph, default_seeds(graph)))
    if args.trace_limit:
        trace = trace[: args.trace_limit]
    if not 0 <= args.min_log2 <= args.max_log2 <= 40 or args.slow_step < 1:
        raise ConfigError("need 0 <= --min-log2 <= --max-log2 <= 40 and --slow-step >= 1")
    sizes = [1 << k for k in range(args.min_log2, args.max_log2 + 1)]
    slow = sizes[:: args.slow_step]
    log.info(f"[cache] trace of {trace.size:,} references")
    result = cache.run(trace, sizes, args.policies or list(cache.POLICIES), seed=args.seed,
                       slow_sizes=slow, timer=timer)
    return cache.table(result), {"": lambda fig: cache.plot(result, fig)}


def _order(graph: LinkGraph, args: argparse.Namespace, timer: Callable[[], float]) -> Result:
    from webgather.sim import order

    seeds = _seeds(graph, args)
    result = order.run(graph, seeds, args.orders or list(order.ORDERS), batch=args.batch, seed=args.seed)
    return order.table(result), {"": lambda fig: order.plot(result, fig)}


def _gnp(graph: LinkGraph, args: argparse.Namespace, timer: Callable[[], float]) -> Result:
    from dataclasses import replace

    from webgather.sim import gnp_sched

    rng = np.random.default_rng(args.seed)
    world = gnp_sched.make_world(rng, n_crawlers=args.crawlers, n_sites=graph.n_hosts, n_cities=args.cities,
                                 n_site_cities=max(args.cities, 8))
    exact, _ = gnp_sched.accuracy_table(world, args.dims, args.landmarks, rng, args.tol, noisy=False)
    noisy, grid = gnp_sched.accuracy_table(world, args.dims, args.landmarks, rng, args.tol)
    params = replace(gnp_sched.DEFAULT_PARAMS, concurrency=args.concurrency, politeness_s=args.politeness)
    rows, horizon = gnp_sched.throughput(graph, world, rng, params, landmarks=args.sched_landmarks,
                                         dims=args.sched_dims)
    text = "\n\n".join([exact, noisy, gnp_sched.throughput_table(rows, horizon)])
    return text, {"": lambda fig: gnp_sched.plot(grid, args.dims, args.landmarks, rows, fig)}


_RUNNERS: dict[str, Callable[[LinkGraph, argparse.Namespace, Callable[[], float]], Result]] = {
    "partition": _partition,
    "crawl": _crawl,
    "cache": _cache,
    "order": _order,
    "gnp": _gnp,
}
