"""Many hosts, few pages each: robots.txt requests per host, RAM and pages/s as the host count grows.

    .venv/bin/python bench/robots_scale.py --hosts 2000 20000 --out /tmp/robots-scale
    .venv/bin/python bench/robots_scale.py --toy          # a few seconds: 60 hosts, max_hosts 20

Every host (``h000001.test``...) has a robots.txt of one Disallow group and three
pages (``/`` links ``/a``, ``/b`` and the disallowed ``/private/x``); a resolve
file maps every name to 127.0.0.1, where one server process (this script with
``--serve``) answers by Host header. Each host count is crawled by one node
(in-process, uvloop, ``--delay 0``, Crawl-delay none, ``per_ip_connections`` =
concurrency: every host shares the one address). ``robots.max_hosts`` is left at
its default (10,000) unless ``--max-hosts`` is given, so the larger runs hold more
hosts than the gate keeps in memory. Prints one JSON line per run: hosts, pages
fetched of those due, robots.txt requests (total, per host: mean and max),
wall s, pages/s, peak RSS of the crawling process (MiB), and the size of
``state/robots.sqlite``. Exits non-zero if a page is missing or a host was asked
for its robots.txt more than once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROBOTS = b"User-agent: *\nDisallow: /private/\n"
PAGE = b'<html><body><a href="/a">a</a> <a href="/b">b</a> <a href="/private/x">x</a></body></html>'
LEAF = b"<html><body>leaf</body></html>"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--max-hosts", type=int, default=None, help="robots.max_hosts (default: the crawler's)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--out", default="/tmp/webgather-robots-scale")
    parser.add_argument("--toy", action="store_true", help="60 hosts, max_hosts 20: a smoke run")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        return serve(args.serve)
    if args.toy:
        args.hosts, args.max_hosts = [60], 20
    ok = True
    for hosts in args.hosts:
        figures = run_one(hosts, args.max_hosts, args.concurrency, Path(args.out) / f"h{hosts}")
        print(json.dumps(figures), flush=True)
        ok = ok and figures["pages"] == figures["pages_due"] and figures["robots_max_per_host"] == 1
    return 0 if ok else 1


def run_one(hosts: int, max_hosts: int | None, concurrency: int, out: Path) -> dict[str, Any]:
    """Crawl ``hosts`` hosts in a child process (its own peak RSS) against a fresh server."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    names = [f"h{i:06d}.test" for i in range(hosts)]
    (out / "resolve.txt").write_text("".join(f"{n} 127.0.0.1\n" for n in names))
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], stdin=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        (out / "seeds.txt").write_text("".join(f"http://{n}:{port}/\n" for n in names))
        job = {"out": str(out), "max_hosts": max_hosts, "concurrency": concurrency}
        child = subprocess.run([sys.executable, "-c", CRAWL_CHILD, json.dumps(job)], capture_output=True,
                               text=True, stdin=subprocess.DEVNULL, check=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    return figures_of(json.loads(child.stdout.strip().splitlines()[-1]), hosts, out)


CRAWL_CHILD = """
import dataclasses, json, resource, sys, time
from pathlib import Path
import uvloop
from webgather.config import CrawlConfig, PolitenessConfig, RobotsConfig
from webgather.runtime.launch.crawl import run_crawl
job = json.loads(sys.argv[1])
out = Path(job["out"])
base = CrawlConfig()
robots = RobotsConfig() if job["max_hosts"] is None else RobotsConfig(max_hosts=job["max_hosts"])
config = dataclasses.replace(
    base, out_dir=str(out / "crawl"), progress=False, robots=robots,
    politeness=PolitenessConfig(min_delay_s=0.0, max_crawl_delay_s=0.0, per_ip_connections=job["concurrency"]),
    fetch=dataclasses.replace(base.fetch, resolve_file=str(out / "resolve.txt"), concurrency=job["concurrency"],
                              allow_addresses=("127.0.0.1/32",)))
seeds = (out / "seeds.txt").read_text().split()
started = time.monotonic()
summary = uvloop.run(run_crawl(config, seeds))
wall = time.monotonic() - started
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"pages": summary["pages"], "wall_s": wall, "peak_rss_mib": rss, "finished": summary["finished"]}))
"""


def figures_of(child: dict[str, Any], hosts: int, out: Path) -> dict[str, Any]:
    from webgather.store.crawllog import read_crawl_log

    robots: Counter[str] = Counter()
    fetched = 0
    for entry in read_crawl_log(out / "crawl" / "crawl.log.jsonl"):
        url = str(entry.get("url", ""))
        if entry.get("kind") == "robots":
            robots[url.split("/")[2]] += 1
        elif entry.get("kind") == "page" and entry.get("status") == 200 and not entry.get("retry"):
            fetched += 1
    state = out / "crawl" / "state" / "robots.sqlite"
    return {
        "hosts": hosts, "pages": fetched, "pages_due": 3 * hosts, "finished": child["finished"],
        "robots_requests": sum(robots.values()), "robots_hosts": len(robots),
        "robots_mean_per_host": round(sum(robots.values()) / hosts, 3),
        "robots_max_per_host": max(robots.values(), default=0),
        "wall_s": round(child["wall_s"], 1), "pages_per_s": round(fetched / child["wall_s"], 1),
        "peak_rss_mib": round(child["peak_rss_mib"], 1),
        "robots_sqlite_kib": round(state.stat().st_size / 1024, 1) if state.exists() else None,
    }


# -- the server: one process, every host, by Host header ------------------------------------------

def serve(port: int) -> int:
    import uvloop

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    uvloop.run(_serve_forever(port))
    return 0


async def _serve_forever(port: int) -> None:
    server = await asyncio.start_server(_answer, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            status, body = (200, ROBOTS) if path == b"/robots.txt" else (200, PAGE) if path == b"/" else (
                (404, b"gone") if path.startswith(b"/private/") else (200, LEAF))
            kind = b"text/plain" if path == b"/robots.txt" else b"text/html"
            writer.write(b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
                         % (status, kind, len(body), body))
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"the bench server did not start on port {port}")


if __name__ == "__main__":
    sys.exit(main())
