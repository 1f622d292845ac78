"""One node crawling a large synthetic web served by a separate, prerendered server.

    .venv/bin/python bench/node_crawl.py --hosts 100 --pages-per-host 1000 --out /tmp/node-bench

The server (``webgather testweb serve --prerender``) renders every content page
before the crawl, so during the crawl it only copies cached bytes. The crawl
obeys robots.txt (Crawl-delay capped at 0: we own the server), writes gzipped
WARC and keeps a persistent frontier; ``--delay 0``. Prints the crawl summary,
the server's CPU, and the comparison with the web's closure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from webgather.commands.crawl import run_main_job
from webgather.config import CrawlConfig
from webgather.clock import SystemClock
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.closure import NOT_FETCHED, crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages-per-host", type=float, default=1000.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--out", default="/tmp/webgather-node-bench")
    add_preset_argument(parser)
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    server, port = start_server(args, out / "testweb")
    try:
        model = WebModel(dataclasses.replace(web_params(args), port=port))
        seed = model.home_url(0)
        config = bench_config(model, seed, out, args.concurrency)
        summary = run_main_job(config, [seed])
        server_cpu_s = process_cpu_s(server.pid)
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait()
    keys = ("pages", "wall_s", "pages_per_s", "pages_99_s", "last_page_s", "cpu_s", "cpu_ms_per_page", "peak_rss_mib",
            "errors")
    print(json.dumps({k: summary[k] for k in keys}))
    print(f"server CPU (prerender included): {server_cpu_s:.1f} s")
    compare(model, seed, config, out / "crawl")


def add_preset_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=("web", "test"), default="web",
                        help="the web's delays: web = realistic (very slow pages 40 s); test = the tests' small ones "
                             "(a toy run of seconds)")


def web_params(args: argparse.Namespace) -> WebParams:
    values = dict(seed=args.seed, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host)
    return WebParams.for_tests(**values) if args.preset == "test" else WebParams(**values)  # type: ignore[arg-type]


def start_server(args: argparse.Namespace, directory: Path) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "webgather", "testweb", "serve", "--preset", args.preset, "--hosts", str(args.hosts),
               "--pages-per-host", str(args.pages_per_host), "--seed", str(args.seed),
               "--out", str(directory), "--prerender", "--cache-mib", "3000"]
    started = time.monotonic()
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        if " port " in line:
            print(f"server ready in {time.monotonic() - started:.0f} s", flush=True)
            return server, int(line.rsplit(" port ", 1)[1])
    raise SystemExit("the server did not start")


def bench_config(model: WebModel, seed: str, out: Path, concurrency: int) -> CrawlConfig:
    config = crawl_config_for(model.params, (seed,))
    return dataclasses.replace(
        config, out_dir=str(out / "crawl"), progress=False,
        fetch=dataclasses.replace(config.fetch, concurrency=concurrency, resolve_file=str(out / "testweb" / "resolve.txt")),
        politeness=dataclasses.replace(config.politeness, min_delay_s=0.0, max_crawl_delay_s=0.0, per_ip_connections=64),
    )


def process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compare(model: WebModel, seed: str, config: CrawlConfig, crawl_dir: Path) -> None:
    expected = crawl_outcomes(model, [seed], config, now_s=SystemClock().wall())
    fetched = {e["url"] for e in read_crawl_log(crawl_dir / "crawl.log.jsonl")
               if not e.get("retry") and e.get("kind") in ("page", "sitemap") and e.get("error") not in NOT_FETCHED}
    print(f"closure {len(expected.fetched)}, fetched {len(fetched)}, "
          f"missing {len(expected.fetched - fetched)}, extra {len(fetched - expected.fetched)}")


if __name__ == "__main__":
    main()
