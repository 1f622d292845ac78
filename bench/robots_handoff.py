"""robots.txt requests per host in a cluster crawl whose buckets change hands (joins), from the server's side.

A node that takes a bucket over should not ask its hosts for robots.txt again within the rules' TTL:
the previous owner hands the rules over with the bucket. This runs ``--nodes`` ``webgather`` node
processes over a Redis of their own (Debian's redis-server on loopback TCP) against the synthetic web
(``--hosts`` hosts, served by this process): node n0 starts the crawl, the others join
``--join-after-s`` apart (every join moves buckets), and ``--late-join-s`` (if > 0) adds one more node
that late into the crawl. Prints one JSON line: robots.txt requests (path ``/robots.txt``, the
server's records), hosts asked, the most requests one host got, pages, wall time.

    .venv/bin/python bench/robots_handoff.py --hosts 60 --nodes 3

The web has no failing robots.txt (a 5xx robots.txt is retried, legitimately) unless ``--with-errors``,
and the fetch timeouts are 10 s (a robots.txt that times out is retried, legitimately).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "cluster")]

from cluster_crawl_helpers import cluster_config, write_toml  # noqa: E402

from webgather.cluster.embedded import EmbeddedRedis  # noqa: E402
from webgather.testweb import TestWebServer, WebModel  # noqa: E402
from webgather.testweb.params import ROBOTS_KINDS, FaultRates, WebParams  # noqa: E402

CRAWL = "robots-handoff"


def web_params(hosts: int, pages: float, with_errors: bool) -> WebParams:
    rates = dataclasses.replace(FaultRates(), calendar=0.0, deep_path=0.0, reset=0.0, reset_headers=0.0,
                                truncated=0.0, very_slow=0.0)
    kinds = tuple((kind, 1.0) for kind in ROBOTS_KINDS if with_errors or kind != "error")
    return WebParams.for_tests(n_hosts=hosts, mean_pages_per_host=pages, pages_sigma=0.0, faults=rates,
                               robots_mix=kinds)


async def _node(work: Path, node: str, redis_url: str, toml: Path, seeds: list[str]) -> asyncio.subprocess.Process:
    common = ["--redis", redis_url, "--crawl", CRAWL, "--out", str(work / node), "--node-id", node]
    args = ["crawl", *seeds, "--config", str(toml), "--no-progress", *common] if node == "n0" else ["node", *common]
    log = (work / f"{node}.log").open("ab")
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args, stdout=log,
                                                stderr=asyncio.subprocess.STDOUT)


async def run(args: argparse.Namespace, work: Path) -> dict[str, object]:
    params = web_params(args.hosts, args.pages, args.with_errors)
    redis = EmbeddedRedis(work / "redis", tcp=True, executable=shutil.which("redis-server"))
    await asyncio.to_thread(redis.start)
    procs: list[asyncio.subprocess.Process] = []
    try:
        async with TestWebServer(WebModel(params)) as srv:
            config = cluster_config(params, work / "unused", srv.write_resolve_file(work / "resolve.txt"),
                                    n_buckets=args.buckets, min_delay_s=args.delay_s, checkpoint_s=2.0,
                                    heartbeat_s=0.25, member_ttl_s=2.0, handoff_timeout_s=10.0)
            # generous timeouts: a robots.txt that times out on a loaded machine is retried, legitimately
            config = dataclasses.replace(config, fetch=dataclasses.replace(
                config.fetch, total_timeout_s=10.0, connect_timeout_s=10.0))
            toml = write_toml(config, work / "crawl.toml")
            seeds = [srv.home_url(0), srv.home_url(3)]
            started = time.monotonic()
            for k in range(args.nodes):
                procs.append(await _node(work, f"n{k}", redis.url, toml, seeds))
                await asyncio.sleep(args.join_after_s)
            if args.late_join_s > 0:
                await asyncio.sleep(max(0.0, started + args.late_join_s - time.monotonic()))
                procs.append(await _node(work, f"n{args.nodes}", redis.url, toml, seeds))
            codes = [await asyncio.wait_for(p.wait(), args.timeout_s) for p in procs]
            wall = time.monotonic() - started
            records = list(srv.records)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        await asyncio.to_thread(redis.stop)
    robots = Counter(r.host for r in records if r.path == "/robots.txt")
    if args.show:
        for host in [h for h, n in robots.items() if n > 1]:
            print(host, [(round(r.start_s - records[0].start_s, 2), r.path, r.status) for r in records if r.host == host][:12])
    return {"hosts": args.hosts, "nodes": args.nodes + (args.late_join_s > 0), "robots_txt": sum(robots.values()),
            "hosts_asked": len(robots), "most_for_one_host": max(robots.values(), default=0),
            "hosts_asked_twice_or_more": sum(1 for n in robots.values() if n > 1),
            "requests": len(records), "codes": codes, "wall_s": round(wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=60)
    parser.add_argument("--pages", type=float, default=20.0, help="pages per host")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--buckets", type=int, default=256)
    parser.add_argument("--delay-s", type=float, default=0.15, help="politeness delay")
    parser.add_argument("--join-after-s", type=float, default=1.0, help="between node starts")
    parser.add_argument("--late-join-s", type=float, default=0.0, help="one more node joins this late (0: none)")
    parser.add_argument("--with-errors", action="store_true", help="some hosts' robots.txt answers 5xx")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--show", action="store_true", help="print the requests of hosts asked more than once")
    parser.add_argument("--work", type=Path, default=None, help="keep the nodes' files here (default: a temp dir)")
    args = parser.parse_args()
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        print(json.dumps(asyncio.run(run(args, args.work))))
        return
    with tempfile.TemporaryDirectory(prefix="wg-robots-handoff-") as tmp:
        print(json.dumps(asyncio.run(run(args, Path(tmp)))))


if __name__ == "__main__":
    main()
