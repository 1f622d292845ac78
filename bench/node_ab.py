"""A/B of one node's CPU per page: interleaved crawls of vs_scrapy's static web by two source trees.

How each hot-path change in the README was measured: the same web, served by
the same nginx (bench/vs_scrapy.py's export and config), crawled in turn by
``webgather crawl`` run from each source tree (``PYTHONPATH=TREE``; the rest
of the environment is this venv), round after round, then the medians of
pages/s, CPU ms per page and peak RSS per variant, each variant's CPU
ratio to the first one (of the medians) and the median of its per-round ratios
of CPU per page and of pages/s (``paired``: each round's runs follow one another, so a shared machine's load
weighs on both sides of a pair alike; the figure to quote when the machine is busy).
The load average is printed at the start and the end.

    .venv/bin/python bench/node_ab.py --variant base=/tmp/base/src --variant new=src --rounds 5
    .venv/bin/python bench/node_ab.py --variant on=src --variant off=src:--pin-cpu,off
    .venv/bin/python bench/node_ab.py --variant c=src --variant py=src --env py:WEBGATHER_NATIVE=0

A variant is ``NAME=TREE[:EXTRA,ARGS]``: extra crawl arguments after the
colon, comma-separated. ``--env NAME:KEY=VALUE`` sets an environment variable
for one variant's crawls (before webgather is imported). Files go under ``--work`` (default
bench/results/node_ab, git-ignored).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import vs_scrapy as vs  # noqa: E402  (the bench's export, nginx and measuring helpers)


@dataclass
class Variant:
    name: str
    tree: Path
    extra: list[str]
    env: dict[str, str] = field(default_factory=dict)
    runs: list[vs.Run] = field(default_factory=list)


def parse_variant(text: str) -> Variant:
    name, _, rest = text.partition("=")
    tree, _, extra = rest.partition(":")
    if not name or not tree:
        raise SystemExit(f"node_ab: --variant {text!r} is not NAME=TREE[:ARGS]")
    return Variant(name, Path(tree).resolve(), [a for a in extra.split(",") if a])


def apply_env(variants: list[Variant], settings: list[str]) -> None:
    by_name = {v.name: v for v in variants}
    for text in settings:
        name, _, assignment = text.partition(":")
        key, equals, value = assignment.partition("=")
        if name not in by_name or not key or not equals:
            raise SystemExit(f"node_ab: --env {text!r} is not NAME:KEY=VALUE for a --variant NAME")
        by_name[name].env[key] = value


def crawl_command(variant: Variant, seed: str, resolve: Path, config: Path, scratch: Path, concurrency: int) -> list[str]:
    # as the console script runs it (its entry ends the process); a tree from before the entry: its CLI
    code = (f"import os, sys; os.environ.update({variant.env!r}); sys.path.insert(0, {str(variant.tree)!r})\n"
            "import importlib.util\n"
            "if importlib.util.find_spec('webgather._entry'):\n"
            "    import webgather._entry as entry\n"
            "    entry.run() if hasattr(entry, 'run') else sys.exit(entry.main())\n"
            "from webgather.cli import main\nsys.exit(main())")
    return [sys.executable, "-c", code, "crawl", seed, "--out", str(scratch / "out"), "--resolve", str(resolve),
            "--delay", "0", "--concurrency", str(concurrency), "--scope", "domains", "--domain", vs.DOMAIN,
            "--config", str(config), "--no-progress", *_loopback_allowed(variant.tree), *variant.extra]


def _loopback_allowed(tree: Path) -> list[str]:
    """The bench web is on loopback: trees with the destination guard must be told to allow it
    (older trees do not know the option)."""
    sections = tree / "webgather" / "config" / "sections.py"
    known = sections.exists() and "allow_addresses" in sections.read_text()
    return ["--allow-address", "127.0.0.0/8"] if known else []


def run_variant(variant: Variant, args: argparse.Namespace, seed: str, resolve: Path, config: Path) -> vs.Run:
    scratch = args.work / "runs" / variant.name
    command = crawl_command(variant, seed, resolve, config, scratch, args.concurrency)
    crawler = vs.Crawler(variant.name, lambda _s: command, lambda s, _o: vs.logged_pages(s / "out"), args.timeout)
    # --workers starts its nodes as `python -m webgather`: they find the variant's tree through PYTHONPATH
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(variant.tree.resolve())
    try:
        return vs.run_once(crawler, scratch)
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def _tail_s(run: vs.Run) -> float | None:
    """The command's wall time beyond its last page (start-up, the end's detection, shutdown, exit)."""
    return None if run.last_page_s is None else run.wall_s - run.last_page_s


def report(variants: list[Variant]) -> str:
    lines = ["variant        pages  pages/s  CPU ms/page (runs)                      peak RSS MiB  CPU ratio"
             "  paired  pages/s paired  99 % s  last s  tail s"]
    base_cpu = None
    for v in variants:
        ok = [r for r in v.runs if r.ok and r.pages]
        if not ok:
            lines.append(f"{v.name:<12} no successful run")
            continue
        cpu = statistics.median(r.cpu_ms_per_page for r in ok)
        base_cpu = base_cpu or cpu
        each = " ".join(f"{r.cpu_ms_per_page:.2f}" for r in ok)
        lines.append(f"{v.name:<12} {ok[0].pages:>7} {statistics.median(r.pages_per_s for r in ok):>8.1f}"
                     f"  {cpu:.3f} ({each}){'':<{max(0, 26 - len(each))}}"
                     f"  {statistics.median(r.peak_rss_mib for r in ok):>10.1f}  {cpu / base_cpu:.3f}"
                     f"  {paired_ratio(v, variants[0])}  {paired_speed(v, variants[0]):>14}"
                     f"  {_median_s([r.pages_99_s for r in ok]):>6}  {_median_s([r.last_page_s for r in ok]):>6}"
                     f"  {_median_s([_tail_s(r) for r in ok]):>6}")
    return "\n".join(lines)


def paired_ratio(variant: Variant, first: Variant) -> str:
    """The median over rounds of ``variant``'s CPU per page over ``first``'s in the same round."""
    ratios = [r.cpu_ms_per_page / f.cpu_ms_per_page for r, f in zip(variant.runs, first.runs)
              if r.ok and f.ok and r.pages and f.pages]
    return f"{statistics.median(ratios):.3f}" if ratios else "  -  "


def paired_speed(variant: Variant, first: Variant) -> str:
    """The median over rounds of ``variant``'s pages/s over ``first``'s in the same round."""
    ratios = [r.pages_per_s / f.pages_per_s for r, f in zip(variant.runs, first.runs)
              if r.ok and f.ok and r.pages and f.pages]
    return f"{statistics.median(ratios):.3f}" if ratios else "  -  "


def load_line(when: str) -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {when}: {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def _median_s(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):.2f}" if known else "-"


def add_web_arguments(parser: argparse.ArgumentParser, *, rounds: int, hosts: int, pages_per_host: float,
                      work: str) -> None:
    """The web's and the runs' options (shared with bench/opic_order.py)."""
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--hosts", type=int, default=hosts)
    parser.add_argument("--pages-per-host", type=float, default=pages_per_host)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--work", type=Path, default=BENCH / "results" / work)


def prepare_web(args: argparse.Namespace) -> tuple[Path, int, Path, Path, str]:
    """vs_scrapy's static web exported under ``args.work``: its nginx servers file, port,
    resolve file, the crawl config (Crawl-delay capped at 0, as for Scrapy) and the seed."""
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    port = vs.free_port()
    servers_conf, _files = vs.export_web(args.work, args, port)
    resolve = args.work / "resolve.txt"
    vs.write_resolve_file(servers_conf, resolve)
    config = args.work / "webgather.toml"
    config.write_text("[politeness]\nmax_crawl_delay_s = 0.0\n")
    return servers_conf, port, resolve, config, f"http://h0001.{vs.DOMAIN}:{port}/"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", action="append", type=parse_variant, required=True)
    parser.add_argument("--env", action="append", default=[], help="NAME:KEY=VALUE for one variant")
    add_web_arguments(parser, rounds=5, hosts=400, pages_per_host=20.0, work="node_ab")
    args = parser.parse_args()
    servers_conf, port, resolve, config, seed = prepare_web(args)
    variants: list[Variant] = args.variant
    apply_env(variants, args.env)
    for variant in variants:  # as installed: no run pays for compiling (vs_scrapy.byte_compile)
        vs.byte_compile(variant.tree / "webgather")
    print(load_line("at the start"), flush=True)
    with vs.nginx(servers_conf, args.work / "nginx", port, "127.0.1.1"):
        for round_no in range(args.rounds):
            shift = round_no % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                run = run_variant(variant, args, seed, resolve, config)
                variant.runs.append(run)
                print(f"  round {round_no + 1} {variant.name:<12} {run.pages} pages {run.wall_s:.2f} s "
                      f"{run.cpu_ms_per_page:.2f} ms/page {run.peak_rss_mib:.1f} MiB"
                      f"{'' if run.ok else ' FAILED ' + run.note}"
                      f"{chr(10) + '    ' + run.cpu_split if run.cpu_split else ''}", flush=True)
    print(load_line("at the end"))
    print(report(variants))
    return 0


if __name__ == "__main__":
    sys.exit(main())
