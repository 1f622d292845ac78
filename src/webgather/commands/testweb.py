"""``webgather testweb serve|stats|export``: the synthetic web from the command line.

* ``serve --hosts N --seed S [--port P] [--out DIR] [--latency-model cities:N]``: serve on 127.0.x.y until
  SIGINT/SIGTERM; writes ``DIR/resolve.txt`` (``host address`` lines, for
  ``crawl --resolve``) and ``DIR/seeds.txt`` and prints where it listens.
* ``stats --hosts N --seed S``: pages, links, hosts, fixtures and the closure
  size of a crawl from h0001's home page over the whole web's domain.
* ``export DIR --hosts N --seed S [--port P]``: a static copy plus an nginx
  config (see :mod:`webgather.testweb.export`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from webgather.errors import ConfigError
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.export import export
from webgather.testweb.graph import WebModel
from webgather.testweb.latency import LatencyModel, parse_latency_model
from webgather.testweb.params import WebParams, closure_settings, closure_toml, crawl_config_for, time_scaled
from webgather.testweb.server import TestWebServer

__all__ = ["register"]


def register(sub: Any) -> None:
    parser = sub.add_parser("testweb", help="the deterministic synthetic web: serve it, describe it, export it")
    actions = parser.add_subparsers(dest="testweb_command", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve the web on loopback until interrupted")
    _web_options(serve)
    serve.add_argument("--out", default="testweb-out", help="directory for resolve.txt and seeds.txt")
    serve.add_argument("--latency", action="store_true", help="add the synthetic per-client latency model (cities:4)")
    serve.add_argument("--latency-model", default=None, metavar="cities:N[:MS]",
                       help="per-(client address, host) delay: clients and hosts hashed into N cities, "
                            "MS ms per unit of distance (default 50)")
    serve.add_argument("--prerender", action="store_true",
                       help="render content pages into the cache before serving (benchmarks: keeps render CPU out of the crawl)")
    serve.add_argument("--cache-mib", type=int, default=256, help="render cache size (default 256 MiB)")
    serve.set_defaults(func=_serve)
    stats = actions.add_parser("stats", help="page, link and host counts and the closure size")
    _web_options(stats)
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(func=_stats)
    exp = actions.add_parser("export", help="write a static copy and an nginx config")
    exp.add_argument("dir", help="output directory")
    _web_options(exp)
    exp.set_defaults(func=_export)


def _web_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hosts", type=int, default=100, help="number of hosts (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pages-per-host", type=float, default=100.0, help="mean content pages per host")
    parser.add_argument("--port", type=int, default=None, help="port (serve: default a free one; others: 8080)")
    parser.add_argument("--preset", choices=["web", "test"], default="web",
                        help="web: realistic defaults; test: small thresholds (fast faults, 0.05 s crawl-delay)")
    parser.add_argument("--time-scale", type=float, default=1.0, metavar="F",
                        help="slow and very slow pages' delays x F (>= 1), and with them the timeout the closure "
                             "assumes (their geometric mean): room for a loaded machine")


def _params(args: argparse.Namespace, port: int) -> WebParams:
    if args.hosts < 1 or args.pages_per_host < 1:
        raise ConfigError("--hosts and --pages-per-host must be >= 1")
    values = dict(seed=args.seed, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host, port=port)
    params = WebParams.for_tests(**values) if args.preset == "test" else WebParams(**values)
    return time_scaled(params, args.time_scale)


def _serve(args: argparse.Namespace) -> int:
    if args.cache_mib < 0:
        raise ConfigError(f"--cache-mib must be >= 0, not {args.cache_mib}")
    model = WebModel(_params(args, args.port or 80))
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency
        runner = asyncio.run
    return int(runner(_serve_async(model, args)))


async def _serve_async(model: WebModel, args: argparse.Namespace) -> int:
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {out}: {exc.strerror}") from exc
    latency = LatencyModel(seed=model.params.seed) if args.latency else None
    if args.latency_model is not None:
        latency = parse_latency_model(args.latency_model, model.params.seed)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with TestWebServer(model, port=args.port or 0, latency=latency, cache_max_bytes=args.cache_mib * 1024 * 1024) as srv:
        if args.prerender:
            print(f"testweb: prerendered {srv.prerender()} pages", flush=True)
        resolve = srv.write_resolve_file(out / "resolve.txt")
        seeds = out / "seeds.txt"
        seeds.write_text(srv.home_url(0) + "\n", encoding="ascii")
        settings = out / "crawl.toml"
        settings.write_text(closure_toml(model.params), encoding="utf-8")
        addresses = model.addresses()
        print(f"testweb: {model.hosts.n_hosts} hosts, {model.n_pages} content pages, seed {model.params.seed}")
        print(f"listening on {addresses[0]}..{addresses[-1]} ({len(addresses)} addresses) port {srv.port}")
        print(f"resolve file: {resolve.resolve()}")
        print(f"seed: {srv.home_url(0)} (also in {seeds.resolve()})")
        print(f"crawl settings of the closure: {settings.resolve()}; all of it: webgather crawl @{seeds} "
              f"--resolve {resolve} --config {settings} --out OUT")
        sys.stdout.flush()
        await stop.wait()
        print(f"testweb: stopping after {srv.requests} requests", flush=True)
    return 0


def _stats(args: argparse.Namespace) -> int:
    params = _params(args, args.port or 8080)
    started = time.perf_counter()
    model = WebModel(params)
    graph = model.link_graph()
    graph_s = time.perf_counter() - started
    seed = model.home_url(0)
    started = time.perf_counter()
    outcome = crawl_outcomes(model, [seed], crawl_config_for(params, (seed,)))
    closure_s = time.perf_counter() - started
    facts = {
        "hosts": model.hosts.n_hosts,
        "addresses": len(model.addresses()),
        "content_pages": graph.n_pages,
        "content_links": graph.n_links,
        "mean_out_degree": round(graph.n_links / max(1, graph.n_pages), 2),
        "fixtures": int(model.hosts.fixtures.sum()),
        "closure_from": seed,
        "closure_size": len(outcome.fetched),
        "closure_settings": closure_settings(params),
        "closure_urls_decided": len(outcome.outcomes),
        "link_graph_s": round(graph_s, 2),
        "closure_s": round(closure_s, 2),
    }
    if args.json:
        print(json.dumps(facts))
    else:
        for key, value in facts.items():
            print(f"{key:22} {value}")
    return 0


def _export(args: argparse.Namespace) -> int:
    port = args.port or 8080
    model = WebModel(_params(args, port))
    written, conf = export(model, args.dir, port)
    print(f"wrote {written} files under {Path(args.dir).resolve()}; nginx config: {conf}")
    return 0
