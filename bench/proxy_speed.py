"""Pages/s of one node crawling a synthetic web directly and through an HTTP proxy on loopback.

    .venv/bin/python bench/proxy_speed.py --hosts 20 --pages-per-host 100 --rounds 3

The web is served by ``webgather testweb serve --prerender`` (its own process); the proxy is the
tests' asyncio forward proxy (tests/integration/forward_proxy.py, with Basic credentials) in a
process of its own on uvloop. Crawls run as ``webgather crawl`` processes, interleaved (direct,
proxy, direct, proxy...), with ``--delay 0`` and Crawl-delay capped at 0. Prints each run and the
medians, with the CPU seconds the server and the proxy used over all rounds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests" / "integration"))

from node_crawl import add_preset_argument, bench_config, process_cpu_s, start_server, web_params  # noqa: E402

from webgather.config import to_toml  # noqa: E402
from webgather.testweb.graph import WebModel  # noqa: E402

CREDENTIALS = ("bench", "bench-pw")


def serve_proxy(resolve_file: str) -> None:
    """The proxy process: print its port, serve until SIGTERM."""
    import asyncio

    import uvloop
    from forward_proxy import ForwardProxy

    names = dict(line.split() for line in Path(resolve_file).read_text().splitlines() if line.strip())

    async def run() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        async with ForwardProxy(names, CREDENTIALS) as proxy:
            print(f"proxy port {proxy.port}", flush=True)
            await stop.wait()

    uvloop.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages-per-host", type=float, default=100.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="/tmp/webgather-proxy-bench")
    parser.add_argument("--serve-proxy", default=None, help=argparse.SUPPRESS)
    add_preset_argument(parser)
    args = parser.parse_args()
    if args.serve_proxy:
        serve_proxy(args.serve_proxy)
        return
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    server, port = start_server(args, out / "testweb")
    proxy = None
    try:
        model = WebModel(dataclasses.replace(web_params(args), port=port))
        seed = model.home_url(0)
        config = dataclasses.replace(bench_config(model, seed, out, args.concurrency), seeds=())
        toml = out / "crawl.toml"
        toml.write_text(to_toml(config))
        proxy, proxy_port = _start_proxy(out / "testweb" / "resolve.txt")
        proxy_url = f"http://{CREDENTIALS[0]}:{CREDENTIALS[1]}@127.0.0.1:{proxy_port}"
        runs: dict[str, list[dict[str, float]]] = {"direct": [], "proxy": []}
        for number in range(args.rounds):
            for name, env in (("direct", {}), ("proxy", {"WEBGATHER_FETCH__PROXY": proxy_url})):
                figures = _crawl(seed, toml, out / f"{name}-{number}", env)
                runs[name].append(figures)
                print(name, number, json.dumps(figures), flush=True)
        server_cpu_s, proxy_cpu_s = process_cpu_s(server.pid), process_cpu_s(proxy.pid)
    finally:
        for process in (server, proxy):
            if process is not None:
                os.kill(process.pid, signal.SIGTERM)
                process.wait()
    for name, figures in runs.items():
        print(f"{name}: median {statistics.median(f['pages_per_s'] for f in figures):.0f} pages/s, "
              f"{statistics.median(f['cpu_ms_per_page'] for f in figures):.3f} ms CPU/page (crawler), "
              f"99 % of pages by {statistics.median(f['pages_99_s'] for f in figures):.2f} s, last page at "
              f"{statistics.median(f['last_page_s'] for f in figures):.2f} s, "
              f"pages {[int(f['pages']) for f in figures]}")
    print(f"server CPU {server_cpu_s:.1f} s, proxy CPU {proxy_cpu_s:.1f} s over all rounds")


def _start_proxy(resolve: Path) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, str(Path(__file__).resolve()), "--serve-proxy", str(resolve)]
    proxy = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proxy.stdout is not None
    for line in proxy.stdout:
        if line.startswith("proxy port "):
            return proxy, int(line.rsplit(" ", 1)[1])
    raise SystemExit("the proxy did not start")


def _crawl(seed: str, toml: Path, out: Path, env: dict[str, str]) -> dict[str, float]:
    clean = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "webgather", "crawl", seed, "--config", str(toml), "--out", str(out),
                    "--no-progress", "--pin-cpu", "off"], env={**clean, **env}, check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "summary.json").read_text())
    keys = ("pages", "wall_s", "pages_per_s", "pages_99_s", "last_page_s", "cpu_ms_per_page")
    return {**{k: float(summary[k]) for k in keys}, "process_s": round(time.monotonic() - started, 2)}


if __name__ == "__main__":
    main()
