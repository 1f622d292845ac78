"""Freshness of a re-crawled collection per revisit policy, against re-crawling everything.

A synthetic web (content pages only, no faults) whose pages change on a
known schedule: 25% never, 55% monthly, 15% daily, 5% hourly, and 10% of
the leaf pages die at a uniform time in the web's first 5 days (12.9 KB
pages on average, the size the WebGather crawl measured). The web is 3 days
old when it is first crawled, so Last-Modified dates are meaningful. It is crawled once; then each
variant re-crawls a copy of that collection for ``--hours`` of simulated
time. The server and the crawl share one clock that jumps to the start of
each cycle (hours pass in seconds; nothing sleeps).

* ``baseline``: every page every ``--baseline-cycle-min`` (60), plain GET,
  every response stored in full (no revisit records).
* ``POLICY@SHARE`` (``--variants``, default uniform, proportional and
  optimal at 0.5, optimal at 0.25): cycles every ``--cycle-min`` (30),
  conditional GET, unchanged payloads stored as revisit records, and a fetch
  budget per cycle such that page *and* robots.txt fetches together are at
  most SHARE of the baseline's per hour (each cycle fetches robots.txt once
  per host).

Freshness at time t: the share of the collection's pages whose stored copy
(status and ETag of the newest archived response, revisits included) equals
the live page at t (a page that died counts as fresh once the archive has
its 404/410). Age: 0 for a fresh page, else t minus the time the live page
first differed from the stored copy. Both are sampled every 5 minutes from
the end of the first crawl and averaged over time. Fetches and WARC bytes
count only what the re-crawl added after the first crawl.

    .venv/bin/python bench/recrawl_freshness.py [--hours 24] [--hosts 10] [--pages-per-host 40]

Measured (2 shared cores; see the report for the command and output).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from webgather.config import CrawlConfig, RecrawlConfig
from webgather.recrawl.cycle import run_cycle, state_path
from webgather.runtime.clock import SystemClock
from webgather.testweb.graph import WebModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.paths import content_index
from webgather.testweb.rand import derive
from webgather.testweb.render import S_VERSION, version_window
from webgather.testweb.server import TestWebServer
from webgather.urls import hostname, path_of

T0 = 1_700_000_000.0
HOUR, DAY = 3600.0, 86400.0
SAMPLE_S = 300.0
AGE_S = 30 * DAY
"""The web is this old when the first crawl starts: Last-Modified dates then say something."""


class BenchClock:
    """Wall time set per cycle (then running in real time); monotonic never goes back."""

    def __init__(self, start_wall: float) -> None:
        self._real = SystemClock()
        self._base, self._real0 = start_wall, self._real.monotonic()
        self._mono_offset = 0.0

    def set_wall(self, wall: float) -> None:
        self._mono_offset += max(0.0, wall - self.wall())
        self._base, self._real0 = wall, self._real.monotonic()

    def wall(self) -> float:
        return self._base + (self._real.monotonic() - self._real0)

    def monotonic(self) -> float:
        return self._real.monotonic() + self._mono_offset


@dataclass
class Variant:
    name: str
    cycle_s: float
    recrawl: RecrawlConfig
    snapshots: list[tuple[float, dict[str, tuple[int | None, str | None, float]]]] = field(default_factory=list)
    page_fetches: int = 0
    robots_fetches: int = 0
    warc_bytes: int = 0
    dead_found: int = 0
    wall_s: float = 0.0
    final: dict[str, tuple[int, float]] = field(default_factory=dict)
    """url -> (visits, estimated change rate per second) at the end."""


class Oracle:
    """The live status and ETag of content pages at any time, from the model's own rules."""

    def __init__(self, model: WebModel, urls: list[str]) -> None:
        self.model = model
        self.info = {}
        for url in urls:
            host, index = model.host_index(hostname(url)), content_index(path_of(url))
            if host is not None and index is not None and index < int(model.hosts.pages[host]):
                self.info[url] = model.info(host, index)

    def live(self, url: str, t: float) -> tuple[bool, str | None, float]:
        """(alive, etag, valid_until of the live version)."""
        info = self.info[url]
        if info.dying and t >= info.die_at_s:
            return False, None, math.inf
        version, _, _, until = version_window(info, self.model.params.epoch_s, t)
        return True, f'"{derive(info.key, S_VERSION + version):016x}"', until

    def stale_since(self, url: str, stored: tuple[int | None, str | None, float], t: float) -> float | None:
        """None if the stored copy equals the live page at t, else when they began to differ."""
        status, etag, seen_at = stored
        alive, live_etag, _ = self.live(url, t)
        info = self.info[url]
        if not alive:
            return None if status in (404, 410) else info.die_at_s
        if status == 200 and etag == live_etag:
            return None
        _, _, until = self.live(url, seen_at)
        return min(until, info.die_at_s if info.dying else math.inf)


def web(args: argparse.Namespace) -> WebModel:
    mix = ((None, 0.25), (30 * DAY, 0.55), (DAY, 0.15), (HOUR, 0.05))
    return WebModel(WebParams(
        seed=args.seed, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host, pages_sigma=0.3,
        faults=FaultRates.none(), robots_mix=(("allow", 1.0),), sitemap_share=0.0, change_mix=mix,
        dying_share=0.1, death_horizon_s=AGE_S + 2 * DAY, epoch_s=T0,
    ))


def snapshot(out: Path) -> dict[str, tuple[int | None, str | None, float]]:
    db = sqlite3.connect(f"file:{state_path(out)}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT url, status, etag, last_change_s FROM urls").fetchall()
    finally:
        db.close()
    return {u: (s, e, c) for u, s, e, c in rows}


def warc_bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in (out / "warc").glob("*.warc*"))


async def run_variant(v: Variant, base: CrawlConfig, initial: Path, work: Path, clock: BenchClock,
                      t_start: float, hours: float) -> None:
    out = work / v.name
    shutil.copytree(initial, out)
    config = dataclasses.replace(base, out_dir=str(out), recrawl=v.recrawl)
    bytes0, real0 = warc_bytes(out), time.perf_counter()
    v.snapshots.append((t_start, snapshot(out)))
    for k in range(1, int(hours * HOUR / v.cycle_s) + 1):
        clock.set_wall(t_start + k * v.cycle_s)
        summary = await run_cycle(config, clock=clock)
        counts = summary["recrawl"]["counts"]
        v.page_fetches += counts.get("fetches", 0)
        v.robots_fetches += summary["robots_fetches"]
        v.dead_found += counts.get("died", 0)
        v.snapshots.append((clock.wall(), snapshot(out)))
    v.warc_bytes = warc_bytes(out) - bytes0
    db = sqlite3.connect(f"file:{state_path(out)}?mode=ro", uri=True)
    try:
        v.final = {u: (n, r or 0.0) for u, n, r in db.execute("SELECT url, visits, rate_per_s FROM urls")}
    finally:
        db.close()
    v.wall_s = time.perf_counter() - real0


def measure(v: Variant, oracle: Oracle, t_start: float, hours: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample times, freshness and mean age (seconds) at each."""
    times = t_start + np.arange(SAMPLE_S, hours * HOUR + 1, SAMPLE_S)
    ends = [t for t, _ in v.snapshots]
    fresh, ages = [], []
    for t in times:
        _, stored = v.snapshots[max(0, int(np.searchsorted(ends, t, side="right")) - 1)]
        since = [oracle.stale_since(url, stored[url], float(t)) for url in oracle.info if url in stored]
        fresh.append(sum(s is None for s in since) / len(since))
        ages.append(sum(0.0 if s is None else max(0.0, t - s) for s in since) / len(since))
    return times, np.array(fresh), np.array(ages)


def page_class(oracle: Oracle, url: str) -> str:
    info = oracle.info[url]
    if info.dying:
        return "dying"
    return {None: "never", HOUR: "hourly", DAY: "daily", 30 * DAY: "monthly"}.get(info.period_s, "other")


def curves_by_class(variants: list[Variant], oracle: Oracle, t_start: float, hours: float) -> dict[str, dict[str, float]]:
    """Time-averaged freshness per variant and page class."""
    out: dict[str, dict[str, float]] = {}
    times = t_start + np.arange(SAMPLE_S, hours * HOUR + 1, SAMPLE_S)
    for v in variants:
        ends = [t for t, _ in v.snapshots]
        fresh: dict[str, list[int]] = {}
        for t in times:
            _, stored = v.snapshots[max(0, int(np.searchsorted(ends, t, side="right")) - 1)]
            for url in oracle.info:
                if url in stored:
                    fresh.setdefault(page_class(oracle, url), []).append(oracle.stale_since(url, stored[url], float(t)) is None)
        out[v.name] = {c: float(np.mean(x)) for c, x in fresh.items()}
    return out


def print_classes(variants: list[Variant], oracle: Oracle, fresh: dict[str, dict[str, float]]) -> None:
    """Per class of page: share, freshness, visits per page, and the estimate over the true rate."""
    classes = ["hourly", "daily", "monthly", "never", "dying"]
    counts = {c: sum(page_class(oracle, u) == c for u in oracle.info) for c in classes}
    print("\nper class of page: freshness / revisits per page in the run / median estimated rate x true period")
    print(f"{'variant':<18}" + "".join(f"{c + ' (' + str(counts[c]) + ')':>24}" for c in classes))
    for v in variants:
        cells = []
        for c in classes:
            urls = [u for u in oracle.info if page_class(oracle, u) == c and u in v.final]
            visits = np.mean([v.final[u][0] - 1 for u in urls]) if urls else 0.0
            period = oracle.info[urls[0]].period_s if urls else None
            ratio = f"{np.median([v.final[u][1] for u in urls]) * period:.2f}" if urls and period else "-"
            cells.append(f"{fresh[v.name].get(c, 0.0):.3f} / {visits:5.1f} / {ratio:>5}")
        print(f"{v.name:<18}" + "".join(f"{cell:>24}" for cell in cells))


def report(variants: list[Variant], oracle: Oracle, t_start: float, hours: float) -> None:
    base = variants[0]
    print(f"\n{'variant':<18}{'fresh':>8}{'fresh@end':>10}{'age min':>9}{'pages':>8}{'robots':>8}"
          f"{'fetch/base':>11}{'WARC MB':>9}{'bytes/base':>11}{'dead':>6}{'run s':>7}")
    curves = {}
    for v in variants:
        times, fresh, ages = measure(v, oracle, t_start, hours)
        curves[v.name] = fresh
        total, base_total = v.page_fetches + v.robots_fetches, base.page_fetches + base.robots_fetches
        print(f"{v.name:<18}{fresh.mean():>8.4f}{fresh[-1]:>10.4f}{ages.mean() / 60:>9.1f}{v.page_fetches:>8}"
              f"{v.robots_fetches:>8}{total / base_total:>11.3f}{v.warc_bytes / 1e6:>9.2f}"
              f"{v.warc_bytes / base.warc_bytes:>11.3f}{v.dead_found:>6}{v.wall_s:>7.0f}")
    print_classes(variants, oracle, curves_by_class(variants, oracle, t_start, hours))
    print("\nfreshness by hour (mean of the 5-minute samples):")
    per_hour = int(HOUR / SAMPLE_S)
    print("hour " + "".join(f"{v.name:>14}" for v in variants))
    for h in range(int(hours)):
        row = "".join(f"{curves[v.name][h * per_hour:(h + 1) * per_hour].mean():>14.4f}" for v in variants)
        print(f"{h + 1:>4} {row}")


async def main(args: argparse.Namespace) -> None:
    model = web(args)
    clock = BenchClock(T0 + AGE_S)
    work = Path(tempfile.mkdtemp(prefix="recrawl-bench-"))
    try:
        async with TestWebServer(model, clock=clock) as server:
            resolve = server.write_resolve_file(work / "resolve.txt")
            cfg = crawl_config_for(model.params)
            base = dataclasses.replace(cfg, progress=False, fetch=dataclasses.replace(cfg.fetch, resolve_file=str(resolve)))
            initial = work / "initial"
            first = await run_cycle(dataclasses.replace(base, out_dir=str(initial)), [server.home_url(0)], clock=clock)
            t_start = clock.wall()
            urls = list(snapshot(initial))
            oracle = Oracle(model, urls)
            check_oracle(oracle, model, t_start)
            hosts = model.params.n_hosts
            n = sum(1 for u in oracle.info if oracle.live(u, t_start)[0])
            print(f"web: {hosts} hosts, first crawl {first['pages']} pages ({n} content pages tracked), "
                  f"{warc_bytes(initial) / 1e6:.2f} MB of WARC; simulated {args.hours} h")
            variants = build_variants(args, n, hosts)
            for v in variants:
                await run_variant(v, base, initial, work, clock, t_start, args.hours)
                print(f"  {v.name}: {len(v.snapshots) - 1} cycles, budget {v.recrawl.budget_per_cycle}, "
                      f"{v.wall_s:.0f} s", flush=True)
        report(variants, oracle, t_start, args.hours)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_variants(args: argparse.Namespace, n: int, hosts: int) -> list[Variant]:
    """The baseline, then one variant per ``policy:share`` of ``--variants``."""
    base_cycle, cycle = args.baseline_cycle_min * 60.0, args.cycle_min * 60.0
    baseline = RecrawlConfig(policy="uniform", cycle_s=base_cycle, conditional_get=False, dedup=False)
    variants = [Variant("baseline", base_cycle, baseline)]
    for spec in args.variants.split(","):
        policy, _, share = spec.partition(":")
        per_hour = (n + hosts) * HOUR / base_cycle * float(share or 0.5)  # n: pages alive at the start  # page + robots fetches an hour
        budget = max(1, int(per_hour * cycle / HOUR) - hosts)
        rc = RecrawlConfig(policy=policy, cycle_s=cycle, budget_per_cycle=budget)  # type: ignore[arg-type]
        variants.append(Variant(f"{policy}@{float(share or 0.5):g}", cycle, rc))
    return variants


def check_oracle(oracle: Oracle, model: WebModel, t: float) -> None:
    """The oracle's ETags are the server's (a few pages, at a few times)."""
    for url in list(oracle.info)[:20]:
        for dt in (0.0, 5 * HOUR, 3 * DAY):
            page = model.page(url, t + dt)
            alive, etag, _ = oracle.live(url, t + dt)
            assert alive == (page.status == 200) and (not alive or page.etag == etag), url


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hours", type=float, default=24.0)
    p.add_argument("--hosts", type=int, default=10)
    p.add_argument("--pages-per-host", type=float, default=40.0)
    p.add_argument("--cycle-min", type=float, default=30.0)
    p.add_argument("--baseline-cycle-min", type=float, default=60.0)
    p.add_argument("--variants", default="uniform:0.5,proportional:0.5,optimal:0.5,optimal:0.25",
                   help="policy:share pairs; share = page + robots fetches an hour, as a share of the baseline's")
    p.add_argument("--seed", type=int, default=7)
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
