"""The whole crawl analysis on a large synthetic link graph: wall time per stage, peak RSS.

Builds a LinkGraph directly with numpy (no crawl, no network): ``--pages``
pages on hosts with Pareto-distributed sizes (about 550 pages per host, the
documents' figure), out-degrees from a Pareto law (mean ``--links/--pages``),
link targets drawn in proportion to Pareto page weights (in-degree power law,
exponent about 2.1), 80 % of links inside their host; 10 % of the pages are
never fetched (targets only); a few hundred planted bipartite cores
(communities) for trawling to find. A matching crawl log of 4 nodes over 12
hours is built as a FetchTable. Then :func:`webgather.analysis.analyze` runs
every stage and the report (JSON, PNGs, HTML) is written to a temp directory.

    .venv/bin/python bench/analysis_scale.py                      # 1 M pages, 25 M links
    .venv/bin/python bench/analysis_scale.py --pages 100000 --links 2500000
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np

from webgather.analysis import AnalysisOptions, FetchTable, analyze, write_report
from webgather.analysis.fetchlog import KINDS
from webgather.linkgraph import LinkGraph
from webgather.clock import SystemClock

SAME_HOST_SHARE = 0.8
UNFETCHED_SHARE = 0.1
HOURS = 12.0
NODES = 4


def host_ranges(rng: np.random.Generator, n_pages: int) -> np.ndarray:
    """Start offsets of each host's contiguous page range (plus the end)."""
    n_hosts = max(1, n_pages // 550)
    weight = rng.pareto(1.2, n_hosts) + 1.0
    sizes = np.maximum(1, np.floor(weight / weight.sum() * n_pages)).astype(np.int64)
    sizes[np.argmax(sizes)] += n_pages - sizes.sum()
    return np.concatenate(([0], np.cumsum(sizes)))


def out_degrees(rng: np.random.Generator, n_pages: int, n_links: int, fetched: np.ndarray) -> np.ndarray:
    alpha = 2.7
    raw = (rng.pareto(alpha - 1.0, n_pages) + 1.0) * fetched
    raw = np.minimum(raw, 200.0 * n_links / n_pages)
    degrees: np.ndarray = np.floor(raw * n_links / raw.sum()).astype(np.int64)
    return degrees


def targets(rng: np.random.Generator, src: np.ndarray, page_host: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Link targets by page weight: inside the source's host or anywhere."""
    weight = rng.pareto(1.1, page_host.size) + 1.0
    cum = np.cumsum(weight)
    cum_before = np.concatenate(([0.0], cum))
    host = page_host[src]
    lo, hi = cum_before[starts[host]], cum_before[starts[host + 1]]
    same = rng.random(src.size) < SAME_HOST_SHARE
    lo = np.where(same, lo, 0.0)
    hi = np.where(same, hi, cum[-1])
    draw = lo + rng.random(src.size) * (hi - lo)
    found: np.ndarray = np.minimum(np.searchsorted(cum, draw, side="right"), page_host.size - 1)
    return found


def planted_cores(rng: np.random.Generator, page_host: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Links of ``count`` complete bipartite cores (5-8 fans, 3-5 centers, all on distinct hosts)."""
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    for _ in range(count):
        fans = rng.choice(page_host.size, size=int(rng.integers(5, 9)), replace=False)
        centers = rng.choice(page_host.size, size=int(rng.integers(3, 6)), replace=False)
        src.append(np.repeat(fans, centers.size))
        dst.append(np.tile(centers, fans.size))
        src.append(np.repeat(fans, 6))  # each fan also links to 6 random pages: 6+ hosts per fan
        dst.append(rng.choice(page_host.size, size=6 * fans.size))
    return np.concatenate(src), np.concatenate(dst)


def build_graph(n_pages: int, n_links: int, seed: int) -> LinkGraph:
    rng = np.random.default_rng(seed)
    starts = host_ranges(rng, n_pages)
    page_host = np.repeat(np.arange(starts.size - 1), np.diff(starts))
    fetched = rng.random(n_pages) >= UNFETCHED_SHARE
    degree = out_degrees(rng, n_pages, n_links, fetched)
    src = np.repeat(np.arange(n_pages), degree)
    dst = targets(rng, src, page_host, starts)
    core_src, core_dst = planted_cores(rng, page_host, 300)
    fetched[core_src] = True
    src, dst = np.concatenate((src, core_src)), np.concatenate((dst, core_dst))
    names = tuple(f"h{h}.example" for h in range(starts.size - 1))
    urls = tuple(f"http://{names[h]}/p{i}" for i, h in enumerate(page_host.tolist()))
    return LinkGraph(src, dst, page_host, names, fetched, urls)


def build_log(graph: LinkGraph, seed: int) -> FetchTable:
    """A 4-node, 12-hour crawl log of the fetched pages (hosts hashed to nodes)."""
    rng = np.random.default_rng(seed + 1)
    pages = np.flatnonzero(graph.fetched)
    n = pages.size
    status = np.where(rng.random(n) < 0.95, 200, 404).astype(np.int32)
    error = np.zeros(n, dtype=np.int32)
    error[rng.random(n) < 0.01] = 1
    status[error == 1] = -1
    return FetchTable(
        status=status,
        size_bytes=np.round(rng.lognormal(9.0, 0.8, n)).astype(np.int64),
        fetched_at=1.7e9 + rng.random(n) * HOURS * 3600.0,
        host=graph.page_host[pages].astype(np.int32),
        host_names=graph.host_names,
        node=((graph.page_host[pages] * 2654435761) % NODES).astype(np.int32),
        node_names=tuple(f"node{i}" for i in range(NODES)),
        kind=np.full(n, KINDS.index("page"), dtype=np.int8),
        error=error,
        error_names=("", "timeout"),
        retries=0,
        bad_entries=0,
    )


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class StageTimer:
    """The analysis' timer: returns wall time, and notes CPU time at each call."""

    def __init__(self, clock: SystemClock) -> None:
        self.clock = clock
        self.cpu: list[float] = []

    def __call__(self) -> float:
        self.cpu.append(cpu_s())
        return self.clock.monotonic()

    def cpu_per_stage(self) -> list[float]:
        return [b - a for a, b in zip(self.cpu, self.cpu[1:])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--links", type=int, default=25_000_000)
    parser.add_argument("--sample", type=int, default=100, help="BFS sources")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--report", default=None, help="keep the report here (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    clock = SystemClock()
    started = clock.monotonic()
    graph = build_graph(args.pages, args.links, args.seed)
    table = build_log(graph, args.seed)
    built = clock.monotonic()
    print(f"graph: {graph.n_pages:,} pages, {graph.n_links:,} links, {graph.n_hosts:,} hosts; "
          f"built in {built - started:.1f} s, peak RSS {peak_rss_mib():,.0f} MiB", flush=True)
    timer = StageTimer(clock)
    cpu_before = cpu_s()
    analysis = analyze(graph, table, AnalysisOptions(sample_sources=args.sample, seed=args.seed), timer=timer)
    analysed, cpu_analysed = clock.monotonic(), cpu_s()
    with tempfile.TemporaryDirectory() as temp:
        write_report(analysis, Path(args.report or temp), "bench")
    reported = clock.monotonic()
    print(f"  {'stage':<24} {'wall s':>8} {'cpu s':>8}")
    for (stage, seconds), cpu in zip(analysis.timings_s.items(), timer.cpu_per_stage()):
        print(f"  {stage:<24} {seconds:8.1f} {cpu:8.1f}")
    print(f"  {'report (json/png/html)':<24} {reported - analysed:8.1f} {cpu_s() - cpu_analysed:8.1f}")
    print(f"analysis total: wall {analysed - built:.1f} s, cpu {cpu_analysed - cpu_before:.1f} s; "
          f"peak RSS {peak_rss_mib():,.0f} MiB")
    fit = analysis.degrees["in"].fit
    last = analysis.trawl.growth[-1]
    print(f"in-degree alpha {fit.alpha:.2f} (x_min {fit.x_min:g})" if fit else "in-degree: no fit", end="; ")
    print(f"mean path {analysis.paths.mean_distance:.2f} +- {analysis.paths.stderr:.2f}; "
          f"core {analysis.bowtie.core:,}; cores K(3+,3) {last.cores[3]:,}, K(3+,4) {last.cores[4]:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
