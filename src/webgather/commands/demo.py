"""``webgather demo``: serve the bundled synthetic web on loopback and crawl it.

The server runs as a separate process (so its CPU is not the crawler's), on
addresses in 127.0.0.0/8 only. The crawl's fetched set is then compared with
the web's own closure (what a correct polite crawler must fetch), exactly.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

from webgather.commands.crawl import print_summary, run_main_job
from webgather.config import FetchConfig
from webgather.errors import ConfigError
from webgather.logs import add_log_options
from webgather.clock import SystemClock
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.closure import NOT_FETCHED, ClosureResult, crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for, load_time_scale, time_scaled

__all__ = ["command_name", "explain_timeouts", "register"]

SERVER_START_S = 60.0


def register(sub: Any) -> None:
    parser = sub.add_parser("demo", help="serve the synthetic web on loopback, crawl it, check the result")
    parser.add_argument("--hosts", type=int, default=20, help="hosts of the synthetic web")
    parser.add_argument("--pages-per-host", type=float, default=50.0, help="mean content pages per host")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic web")
    parser.add_argument("--concurrency", type=int, default=FetchConfig().concurrency, help="requests in flight")
    parser.add_argument("--out", default="demo-out", help="directory for the crawl (a fresh run each time)")
    parser.add_argument("--time-scale", type=float, default=None, metavar="F",
                        help="the demo web's slow pages, very slow pages and the crawl's timeout x F (>= 1); "
                             "default: the machine's load per core (1-minute average), at least 1, so that "
                             "ordinary pages are not cut on a busy machine")
    add_log_options(parser)
    parser.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    if min(args.hosts, args.pages_per_host, args.concurrency) < 1:
        raise ConfigError("demo: --hosts, --pages-per-host and --concurrency must be >= 1")
    out = Path(args.out)
    _clear_previous_demo(out)
    args.time_scale = _time_scale(args.time_scale)
    params = time_scaled(WebParams.for_tests(seed=args.seed, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host),
                         args.time_scale)
    server, port = _start_server(args, out / "testweb")
    try:
        model = WebModel(dataclasses.replace(params, port=port))
        seed = model.home_url(0)
        config = crawl_config_for(model.params, (seed,))
        config = dataclasses.replace(
            config, out_dir=str(out / "crawl"), progress=True,
            fetch=dataclasses.replace(config.fetch, concurrency=args.concurrency, resolve_file=str(out / "testweb" / "resolve.txt")),
        )
        print(f"crawling {seed} ({args.hosts} hosts, about {model.n_pages} pages) into {out / 'crawl'}; "
              f"timeout {config.fetch.total_timeout_s:.2f} s (time scale {args.time_scale:g})", flush=True)
        summary = run_main_job(config, [seed])
    finally:
        _stop_server(server)
    print_summary(summary)
    return _compare(model, seed, config, out / "crawl")


def _clear_previous_demo(out: Path) -> None:
    """A demo starts fresh: remove an earlier demo's output, refuse anything else."""
    crawl = out / "crawl"
    if not crawl.exists():
        return
    if not (crawl / "seeds.txt").exists():
        raise ConfigError(f"{crawl} exists and is not an earlier demo's output: pass another --out")
    shutil.rmtree(crawl)
    shutil.rmtree(out / "testweb", ignore_errors=True)


def _time_scale(given: float | None) -> float:
    """``--time-scale``, or the machine's load per core (:func:`load_time_scale`); refused below 1."""
    if given is not None:
        if not (math.isfinite(given) and given >= 1):
            raise ConfigError(f"demo: --time-scale must be a number >= 1, not {given:g}")
        return given
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system: a quiet machine's limits
        return 1.0
    return load_time_scale(load, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _start_server(args: argparse.Namespace, directory: Path) -> tuple[subprocess.Popen[str], int]:
    command = [
        sys.executable, "-m", "webgather", "testweb", "serve", "--preset", "test", "--hosts", str(args.hosts),
        "--pages-per-host", str(args.pages_per_host), "--seed", str(args.seed), "--out", str(directory),
        "--time-scale", repr(args.time_scale),
    ]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        if " port " in line:
            return server, int(line.rsplit(" port ", 1)[1])
    _stop_server(server)
    raise ConfigError("the synthetic web server did not start (see its messages above)")


def _stop_server(server: subprocess.Popen[str]) -> None:
    if server.poll() is None:
        os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()


def _compare(model: WebModel, seed: str, config: Any, crawl_dir: Path) -> int:
    expected = crawl_outcomes(model, [seed], config, now_s=SystemClock().wall())
    final = {
        e["url"]: e for e in read_crawl_log(crawl_dir / "crawl.log.jsonl")
        if not e.get("retry") and e.get("kind") in ("page", "sitemap") and e.get("error") not in NOT_FETCHED
    }
    fetched = set(final)
    missing, extra = expected.fetched - fetched, fetched - expected.fetched
    verdict = "exact match" if not missing and not extra else f"{len(missing)} missing, {len(extra)} extra"
    print(f"closure check: fetched {len(fetched)} URLs; the web's closure from the seed has {len(expected.fetched)}: {verdict}")
    for line in explain_timeouts(expected, final, missing, config.fetch.total_timeout_s):
        print(line)
    program = command_name(sys.argv[0], sys.executable, Path.cwd(), shutil.which(Path(sys.argv[0]).name))
    print(f"next: {program} analyze {shlex.quote(str(crawl_dir))}")
    return 0 if not missing and not extra else 1


def explain_timeouts(expected: ClosureResult, final: Mapping[str, Mapping[str, Any]], missing: Set[str],
                     timeout_s: float, shown: int = 5) -> list[str]:
    """Which pages timed out although the web answers them in time, and which missing pages only they link to."""
    cut = sorted(url for url, entry in final.items() if entry.get("error") == "timeout"
                 and (want := expected.outcomes.get(url)) is not None and want.error is None)
    if not cut:
        return []
    behind = sorted(missing & {link for url in cut for link in expected.outcomes[url].links})
    lines = [f"timed out: {len(cut)} pages the web answers within the {timeout_s:.2f} s timeout (the machine was "
             f"too busy; --time-scale F gives them F times the room): {' '.join(cut[:shown])}"
             f"{' ...' if len(cut) > shown else ''}"]
    if behind:
        lines.append(f"not reached: {len(behind)} of the {len(missing)} missing pages are linked from those: "
                     f"{' '.join(behind[:shown])}{' ...' if len(behind) > shown else ''}")
    return lines


def command_name(argv0: str, executable: str, cwd: Path, on_path: str | None) -> str:
    """The command that runs webgather the way this process was started, for the user to type next.

    ``python -m webgather`` (argv0 is the package's ``__main__.py``): that interpreter with ``-m``;
    a console script that ``PATH`` finds (``on_path``): its bare name; else its path, relative to
    ``cwd`` when below it (``.venv/bin/webgather``)."""
    if Path(argv0).name == "__main__.py":
        return f"{_shorter(executable, cwd)} -m webgather"
    if on_path is not None and Path(on_path).resolve() == (cwd / argv0).resolve():
        return Path(argv0).name
    return _shorter(argv0, cwd)


def _shorter(path: str, cwd: Path) -> str:
    full = cwd / path  # an absolute path stays itself
    text = str(full.relative_to(cwd)) if full.is_relative_to(cwd) else str(full)
    return shlex.quote(text if "/" in text else f"./{text}")  # a bare name would be looked up on PATH
