"""GNP live: host-hash vs GNP Top1 vs GNP Top3 assignment, N node processes on one machine.

    .venv/bin/python bench/gnp_live.py [--out /tmp/webgather-gnp-live]    # 4 nodes, latency-bound defaults
    .venv/bin/python bench/gnp_live.py --shared-city                      # 6 nodes, 3 in each of 2 cities
    .venv/bin/python bench/gnp_live.py --toy                              # seconds: the smoke test's size

The synthetic web runs in its own process with ``--latency-model cities:C:MS``:
every response is delayed by the (client address, host) pair's distance, with
clients and hosts hashed into C "cities". Node i binds ``--source-address`` in
city ``i mod C`` (addresses picked with the same model), so the nodes stand in
the study's crawlers spread over cities. For each assignment the bench starts
a fresh crawl in one embedded Redis (M = 4096, the same config but
``cluster.partition_by`` / ``gnp_k``), runs N ``webgather node`` processes to the
end, and reports pages, pages/s (first page fetch to last; ``from_start_s`` counts from the
crawl's start, node start-up included), the mean fetch latency (the crawl logs'
``elapsed_s`` of page fetches), the load-balance variance (``var_share`` per
interval, mean; and the variance of the nodes' page shares over the whole
crawl), the share of hosts GNP placed, and the gain in pages/s over host-hash
beside the study's (Top1 +22.0 %, Top3 +36.1 % over random assignment; a hash
is a random assignment). Landmarks: two hosts of each city (their robots.txt).

The last line is machine-readable:
``gnp_live host-hash=<pages/s> top1=<pages/s> top3=<pages/s>``.

Politeness is one connection per host and no delay (we own the server), so a
host's pages come one after the other and the fetch latency sets the pace of a
host; CPU is shared by N nodes, the server and Redis on 2 cores, so the gain is
that of a latency-bound crawl diluted by CPU contention.

With the defaults (4 nodes in 4 cities, ``--ms-per-unit 1500 --hosts 40 --pages-per-host 30
--concurrency 8``: latency-bound), 2026-11-27 15:07 UTC, and ``--shared-city`` (6 nodes, 3 per
city) at 15:12 UTC, 2 cores shared with other work (noisy; more rounds in docs/reproducing.md),
1,096-1,097 pages each::

    setting      assignment  wall_s  99%_s  pages/s  gain      mean_fetch_ms  gnp_placed
    4 in 4       host-hash   60.7    48.5   18.1     +0.0 %    408.8          -
    4 in 4       top1        24.3    23.5   45.1     +149.2 %  161.3          39/40
    4 in 4       top3        43.7    40.5   25.1     +38.7 %   218.0          39/40
    6 in 2       host-hash   83.3    71.1   13.2     +0.0 %    501.1          -
    6 in 2       top1        27.9    26.7   39.3     +197.7 %  151.2          39/40
    6 in 2       top3        30.3    28.5   36.2     +174.2 %  201.3          39/40

The seed is the first host's home page whose host the two-stage mapping gives to a node of
its own city (:func:`seed_near_its_node`): seeds are filed before any node runs, so GNP never
places them.

Measured 2026-11-25 16:27 UTC, before hosts were placed off the discovery path (2 cores
shared with other work; single runs), ``--nodes 8 --hosts 60 --pages-per-host 20
--concurrency 4 --ms-per-unit 300``, 1,091 pages each::

    assignment  pages/s  gain    study   mean_fetch_ms  var_share(interval)  chosen is nearest
    host-hash   56.6     +0.0 %  +0.0 %  146.6          3.2e-02              -
    top1        58.7     +3.7 %  +22.0 % 77.4           1.7e-02              78 % (22 vs 109 ms model)
    top3        52.0     -8.1 %  +36.1 % 84.4           1.8e-02              25 % (41 vs 109 ms model)

With ``--nodes 4`` (same web, C = 4): 119.5 / 99.9 (-16.4 %) / 77.4 (-35.2 %) pages/s,
mean fetch 102.7 / 35.4 / 81.5 ms. GNP cuts the fetch latency as the study says; the
throughput gain does not follow here: the crawl is CPU- and discovery-bound, and each
new host is parked for its httpping round (see docs/reproducing.md, "GNP live").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.mapping import initial
from webgather.cluster.positions import positions_of
from webgather.cluster.redis import RedisBackend
from webgather.cluster.status import merge_summaries
from webgather.config import CrawlConfig, load
from webgather.runtime.launch.cluster import start_crawl
from webgather.runtime.launch.workers import node_command, worker_env
from webgather.runtime.partition.gnp_probe import probe_url
from webgather.store.crawllog import read_crawl_log
from webgather.store.summary import read_summary
from webgather.testweb.latency import LatencyModel, parse_latency_model
from webgather.testweb import WebModel, closure
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.urls import host_key

NOT_FETCHED = ("robots", "robots_unavailable", "off_scope")
STUDY_GAIN = {"host-hash": 0.0, "top1": 0.220, "top3": 0.361}
VARIANTS = {"host-hash": ("host", 1), "top1": ("gnp", 1), "top3": ("gnp", 3)}


TOY = {"nodes": 2, "cities": 2, "ms_per_unit": 50, "gnp_wait_s": 2.0, "hosts": 4, "pages_per_host": 4.0,
       "concurrency": 4, "variants": "host-hash,top1", "timeout_s": 120.0}
"""``--toy``: a run of seconds that takes every path of the bench (the smoke test's size)."""
SHARED_CITY = {"nodes": 6, "cities": 2}
"""``--shared-city``: the Top-K setting, K = 3 nodes in each city (node i is in city ``i mod cities``):
with one node per city Top3 is close to random; here it spreads a city's hosts over its 3 nodes."""


def main() -> None:
    args = parse_args(sys.argv[1:])
    if not 1 <= args.nodes <= 16 or not 1 <= args.cities <= 64:
        raise SystemExit("--nodes must be in 1..16 and --cities in 1..64")
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    server, port = start_server(args, out / "testweb")
    try:
        with EmbeddedRedis(out / "redis") as redis:
            rows = [run_variant(args, out, port, redis.url, name) for name in args.variants.split(",")]
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait()
    print_table(rows)
    speed = {r["assignment"]: r["pages_per_s"] for r in rows}
    print("gnp_live " + " ".join(f"{name}={speed.get(name, 'nan')}" for name in VARIANTS))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4, help="node processes")
    parser.add_argument("--cities", type=int, default=4)
    parser.add_argument("--ms-per-unit", type=int, default=1500,
                        help="latency model: ms per unit of distance (cities up to ~1.1 units apart)")
    parser.add_argument("--gnp-wait-s", type=float, default=10.0,
                        help="cluster.gnp_wait_s: node processes start seconds apart on a loaded machine")
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages-per-host", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8, help="per node")
    parser.add_argument("--variants", default="host-hash,top1,top3")
    parser.add_argument("--out", default="/tmp/webgather-gnp-live")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="per assignment; then the nodes are killed")
    parser.add_argument("--toy", action="store_true", help="toy size (seconds): " +
                        " ".join(f"{k}={v}" for k, v in TOY.items()) + "; flags given still win")
    parser.add_argument("--shared-city", action="store_true", help="Top-K setting: " +
                        " ".join(f"{k}={v}" for k, v in SHARED_CITY.items()) + " (3 nodes per city); flags given still win")
    if "--shared-city" in argv:
        parser.set_defaults(**SHARED_CITY)
    if "--toy" in argv:
        parser.set_defaults(**TOY)
    return parser.parse_args(argv)


def start_server(args: argparse.Namespace, directory: Path) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "webgather", "testweb", "serve", "--hosts", str(args.hosts),
               "--pages-per-host", str(args.pages_per_host), "--seed", str(args.seed), "--out", str(directory),
               "--prerender", "--preset", "test", "--latency-model", spec(args)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        if " port " in line:
            return server, int(line.rsplit(" port ", 1)[1])
    raise SystemExit("the server did not start")


def spec(args: argparse.Namespace) -> str:
    return f"cities:{args.cities}:{args.ms_per_unit}"


def node_addresses(args: argparse.Namespace) -> list[str]:
    """Node i's source address: one in city ``i mod cities`` of the server's model."""
    model = parse_latency_model(spec(args), args.seed)
    by_city: dict[int, list[str]] = {}
    for i in range(20_000):
        address = f"127.0.{50 + i // 250}.{1 + i % 250}"
        by_city.setdefault(model.city(address), []).append(address)
    return [by_city[i % args.cities][i // args.cities] for i in range(args.nodes)]


def landmarks(args: argparse.Namespace, port: int) -> tuple[str, ...]:
    model = parse_latency_model(spec(args), args.seed)
    hosts = [f"h{i:04d}.web.test" for i in range(1, args.hosts + 1)]
    chosen = [h for city in range(args.cities) for h in [h for h in hosts if model.city(h) == city][:2]]
    return tuple(probe_url(f"{h}:{port}") for h in chosen)


def config_for(args: argparse.Namespace, out: Path, port: int, name: str) -> CrawlConfig:
    params = WebParams.for_tests(seed=args.seed, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host, port=port)
    base = crawl_config_for(params)
    partition, k = VARIANTS[name]
    return load(None, {}, {
        "out_dir": str(out), "progress": False, "pin_cpu": "off",
        "politeness.min_delay_s": 0.0, "politeness.max_crawl_delay_s": 0.0, "politeness.per_ip_connections": 64,
        "politeness.backoff_base_s": base.politeness.backoff_base_s, "politeness.backoff_max_s": base.politeness.backoff_max_s,
        "fetch.allow_addresses": ["127.0.0.0/8"],  # the synthetic web is on loopback, which the guard refuses
        "fetch.concurrency": args.concurrency, "fetch.resolve_file": str(out.parent / "testweb" / "resolve.txt"),
        "fetch.total_timeout_s": 2.0, "fetch.connect_timeout_s": base.fetch.connect_timeout_s,
        "scope.mode": "domains", "scope.domains": [params.domain], "scope.max_url_length": 300,
        "robots.error_retry_s": base.robots.error_retry_s, "robots.retry_factor": base.robots.retry_factor,
        "robots.max_tries": base.robots.max_tries, "cluster.heartbeat_s": 0.25, "cluster.member_ttl_s": 2.0,
        "cluster.interval_s": 2.0, "cluster.partition_by": partition, "cluster.gnp_k": k,
        "cluster.gnp_wait_s": args.gnp_wait_s,
        "cluster.gnp_landmarks": list(landmarks(args, port)) if partition == "gnp" else [],
    })


def run_variant(args: argparse.Namespace, root: Path, port: int, url: str, name: str) -> dict[str, Any]:
    out = root / f"crawl-{name}"
    config = config_for(args, out, port, name)
    nodes = [f"w{i}" for i in range(args.nodes)]
    seed_url = seed_near_its_node(args, port, config, nodes)
    out.mkdir(parents=True, exist_ok=True)
    epoch = asyncio.run(_start(url, name, config, [seed_url], nodes))
    procs = [subprocess.Popen(node_command(name, out, node, ["--source-address", address, "--pin-cpu", "off"]),
                              stdout=subprocess.DEVNULL, stderr=open(out / f"{node}.err", "w"),  # noqa: SIM115
                              env=worker_env(url))  # the Redis URL goes in the environment, never in argv
             for node, address in zip(nodes, node_addresses(args), strict=True)]
    codes = wait_all(procs, args.timeout_s)
    if any(codes):
        raise SystemExit(f"{name}: node exit codes {codes} (see {out}/*.err)")
    summaries = [read_summary(out / "nodes" / node) for node in nodes]
    merged = merge_summaries(summaries)
    model = parse_latency_model(spec(args), args.seed)
    placed = asyncio.run(_placed(url, name, config, model, dict(zip(nodes, node_addresses(args), strict=True))))
    return {**figures(name, out, merged, epoch), **placed, "seed": seed_url}


def seed_near_its_node(args: argparse.Namespace, port: int, config: CrawlConfig, nodes: list[str]) -> str:
    """The first host's home page that reaches the whole web and whose host the two-stage
    mapping gives to a node in its own city (the same in every assignment of a run).

    A seed is filed before any node runs, so nobody can measure its host: it gets its
    two-stage bucket whatever the assignment. A far seed host would make every run as long
    as its own pages fetched one by one from afar (76 pages at ~1.2 s: ~90 s here), and the
    port, so the seed host's bucket, changes from run to run."""
    model = parse_latency_model(spec(args), args.seed)
    table = initial(nodes, config.cluster.n_buckets)
    city = {node: model.city(address) for node, address in zip(nodes, node_addresses(args), strict=True)}
    web = WebModel(WebParams.for_tests(seed=args.seed, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host,
                                       port=port))
    whole = len(closure(web, [web.home_url(0)], config))
    for i in range(args.hosts):
        url = web.home_url(i)
        near = city[table.owner_of(host_key(url))] == model.city(host_key(url).split(":")[0])
        if near and len(closure(web, [url], config)) == whole:
            return url
    return web.home_url(0)


def wait_all(procs: list[subprocess.Popen[bytes]], timeout_s: float) -> list[int]:
    """Exit codes; nodes still running after ``timeout_s`` are killed (code -9)."""
    deadline = time.monotonic() + timeout_s
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
    return codes


async def _start(url: str, name: str, config: CrawlConfig, seeds: list[str], nodes: list[str]) -> float:
    backend = await RedisBackend.connect(url, name, config.cluster.n_buckets)
    try:
        return (await start_crawl(backend, config, seeds, nodes=nodes)).epoch
    finally:
        await backend.aclose()


async def _placed(url: str, name: str, config: CrawlConfig, model: LatencyModel,
                  addresses: dict[str, str]) -> dict[str, Any]:
    """How GNP placed the hosts: how many, and how near (by the server's model) the chosen node is."""
    if config.cluster.partition_by != "gnp":
        return {}
    backend = await RedisBackend.connect(url, name, config.cluster.n_buckets)
    try:
        placements = await positions_of(backend).get_placements()
    finally:
        await backend.aclose()
    placed = {h: p.node for h, p in placements.items() if p.node is not None}

    def ms(node: str, host: str) -> float:
        return 1000 * model.latency_s(addresses[node], host)
    return {"gnp_placed": f"{len(placed)}/{len(placements)}",
            "chosen_is_nearest": round(statistics.mean(
                ms(n, h) <= min(ms(m, h) for m in addresses) + 1e-9 for h, n in placed.items()), 2) if placed else None,
            "model_ms_chosen": round(statistics.mean(ms(n, h) for h, n in placed.items()), 1) if placed else None,
            "model_ms_any": round(statistics.mean(ms(n, h) for h in placed for n in addresses), 1) if placed else None}


def figures(name: str, out: Path, merged: dict[str, Any], epoch: float) -> dict[str, Any]:
    elapsed: list[float] = []
    done_at: list[float] = []
    per_node: dict[str, int] = {}
    errors: Counter[str] = Counter()
    for log in out.glob("nodes/*/crawl.log.jsonl"):
        count = 0
        for entry in read_crawl_log(log):
            if entry.get("kind") != "page" or entry.get("retry") or entry.get("error") in NOT_FETCHED:
                continue
            if "elapsed_s" not in entry:  # refused before any fetch (forbidden_address, dns...)
                errors[str(entry.get("error"))] += 1
                continue
            elapsed.append(float(entry["elapsed_s"]))
            done_at.append(float(entry["fetched_at"]))
            count += 1
        per_node[log.parent.name] = count
    if not elapsed:
        raise SystemExit(f"{name}: no page was fetched (errors {dict(errors)}; see {out}/nodes/*/crawl.log.jsonl)")
    pages = len(elapsed)
    first = min(at - e for at, e in zip(done_at, elapsed, strict=True))
    done_at.sort()
    span_s = done_at[-1] - first  # first page fetch to last: the node processes' start-up is not the assignment's
    shares = [n / pages for n in per_node.values()]
    return {"assignment": name, "pages": pages, "wall_s": round(span_s, 2),
            "p99_s": round(done_at[math.ceil(0.99 * pages) - 1] - first, 2), "last_s": round(span_s, 2),
            "from_start_s": round(done_at[-1] - epoch, 2),
            "pages_per_s": round(pages / span_s, 1) if span_s > 0 else 0.0,
            "mean_fetch_ms": round(1000 * statistics.mean(elapsed), 1),
            "var_share_mean": merged["load"]["var_share_mean"],
            "var_share_crawl": statistics.pvariance(shares) if len(shares) > 1 else 0.0, "per_node_pages": per_node}


def print_table(rows: list[dict[str, Any]]) -> None:
    base = next((r["pages_per_s"] for r in rows if r["assignment"] == "host-hash"), None)
    print("assignment  pages  wall_s  99%_s  pages/s  gain     study   mean_fetch_ms  var_share(interval)  "
          "var_share(crawl)  gnp_placed")
    for r in rows:
        gain = f"{r['pages_per_s'] / base - 1:+.1%}" if base else "-"
        var_i = f"{r['var_share_mean']:.2e}" if r["var_share_mean"] is not None else "-"
        print(f"{r['assignment']:<10}  {r['pages']:>5}  {r['wall_s']:>6}  {r['p99_s']:>5}  {r['pages_per_s']:>7}  {gain:>7}  "
              f"{STUDY_GAIN[r['assignment']]:+.1%}  {r['mean_fetch_ms']!s:>13}  {var_i:>19}  "
              f"{r['var_share_crawl']:>16.2e}  {r.get('gnp_placed', '-'):>10}")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
