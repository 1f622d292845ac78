"""How fast the simulator is: the cache replay on a large trace and the crawl DES.

Run: ``.venv/bin/python bench/sim_speed.py [--hosts 4000] [--seed 1] [--refs 10000000]
[--cache-size 65536] [--des-hosts 1000]``

1. Builds the synthetic web ``testweb:HOSTS:SEED`` (4000 hosts: ~400 k pages,
   ~10 M links) and its breadth-first seen-test trace, cut to ``--refs``.
2. Times, on that trace: dense ids, LRU stack distances (every size at once),
   next-use indices, then one size (``--cache-size``) of Belady, CLOCK and random.
3. Times one run of the crawl DES on ``testweb:DES_HOSTS:SEED`` (~100 k pages)
   with 1 and with 16 nodes, in microseconds per fetched page.

Wall times (``SystemClock``, single runs: these take seconds to minutes, so a
best-of is not affordable; the machine is shared, expect +-20 %). OpenBLAS is
held to one thread, as ``webgather simulate`` does.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from threadpoolctl import threadpool_limits

from webgather.clock import SystemClock
from webgather.sim import cache
from webgather.sim.des import CrawlParams, page_costs, simulate
from webgather.sim.partition import host_owner, keys_of
from webgather.sim.traces import adjacency, bfs_order, default_seeds, discovery_trace
from webgather.testweb import WebModel, WebParams

T = TypeVar("T")
CLOCK = SystemClock()


def timed(label: str, fn: Callable[[], T], per: int | None = None, unit: str = "") -> T:
    start = CLOCK.monotonic()
    value = fn()
    took = CLOCK.monotonic() - start
    rate = f"  ({took / per * 1e6:.2f} us/{unit})" if per else ""
    print(f"{label:<44} {took:8.2f} s{rate}", flush=True)
    return value


def bench_cache(hosts: int, seed: int, refs: int, size: int) -> None:
    graph = timed(f"testweb:{hosts}:{seed} link graph", lambda: WebModel(
        WebParams(seed=seed, n_hosts=hosts)).link_graph())
    print(f"  {graph.n_pages:,} pages, {graph.n_links:,} links")
    trace = timed("BFS order + discovery trace",
                  lambda: discovery_trace(graph, bfs_order(graph, default_seeds(graph))))[:refs]
    n = int(trace.size)
    print(f"  trace: {n:,} references")
    ids, distinct = timed("dense ids", lambda: cache.dense_ids(trace), n, "ref")
    print(f"  {distinct:,} distinct keys")
    timed("LRU stack distances (all sizes)", lambda: cache.stack_distances(ids), n, "ref")
    nxt = timed("next-use indices", lambda: cache.next_use(ids), n, "ref")
    hits = timed(f"Belady, {size:,} entries", lambda: cache.belady_hits(ids, size, nxt), n, "ref")
    print(f"  clairvoyant hit rate {hits / n:.3f}")
    for policy in ("clock", "random"):
        hits = timed(f"{policy}, {size:,} entries",
                     lambda p=policy: cache.replay_hits(p, ids, size, seed), n, "ref")  # type: ignore[misc]
        print(f"  {policy} hit rate {hits / n:.3f}")


def bench_des(hosts: int, seed: int) -> None:
    graph = WebModel(WebParams(seed=seed, n_hosts=hosts)).link_graph()
    params = CrawlParams()
    costs = page_costs(graph, params, np.random.default_rng(seed))
    adj = adjacency(graph)
    keys = keys_of(graph)
    seeds = default_seeds(graph)
    for n in (1, 16):
        owner = host_owner(keys, "two-stage", n) if n > 1 else np.zeros(graph.n_hosts, np.int64)
        run = timed(f"DES, {graph.n_pages:,} pages, {n} node(s)",
                    lambda o=owner: simulate(graph, o, seeds, params, costs, adj=adj),  # type: ignore[misc]
                    graph.n_pages, "page")
        print(f"  fetched {run.fetch_time.size:,}, {run.messages:,} messages")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--refs", type=int, default=10_000_000)
    parser.add_argument("--cache-size", type=int, default=1 << 16)
    parser.add_argument("--des-hosts", type=int, default=1000)
    args = parser.parse_args()
    with threadpool_limits(limits=1, user_api="blas"):
        bench_cache(args.hosts, args.seed, args.refs, args.cache_size)
        bench_des(args.des_hosts, args.seed)


if __name__ == "__main__":
    main()
