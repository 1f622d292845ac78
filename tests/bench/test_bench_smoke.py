"""Every bench is code: each ``bench/*.py`` runs here at toy size and must exit 0.

A bench that no test runs rots unseen (one failed at once on a config change and nobody knew), so
every script in ``bench/`` has an entry in :data:`SMOKE`: the arguments of a run of a few seconds,
or, for a peer's side that runs only under its bench (``scrapy_crawler.py`` under
``vs_scrapy.py``), the bench and arguments that run it. A new script without an entry fails
:func:`test_every_bench_has_a_smoke_entry`. Peers that are not installed (Scrapy, Crawlee, nginx,
py-spy) are skipped inside the bench with one line; the webgather rows still run. Each run writes
under ``tmp_path`` only and talks to servers it starts on loopback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SRC = ROOT / "src"
WORK = "{work}"
"""Replaced by the test's own directory."""

SMOKE: dict[str, tuple[str, list[str]]] = {
    "analysis_scale.py": ("analysis_scale.py", ["--pages", "20000", "--links", "200000", "--sample", "5"]),
    # 30 MB pages: past parse.max_bytes (a prefix is parsed); the whole page's tree alone would pass the bound
    "big_pages.py": ("big_pages.py", ["--hosts", "4", "--page-mb", "30", "--max-tree-mib", "640", "--timeout", "120",
                                      "--work", WORK]),
    # cluster_faults: node b joins late, so the web must last long enough for it to get pages
    "cluster_faults.py": ("cluster_faults.py", ["--faults", "none", "--hosts", "12", "--pages-per-host", "20",
                                                "--delay-s", "0.25", "--kill-after-pages", "3", "--crawled-s", "0.5",
                                                "--timeout-s", "120", "--work", WORK]),
    "cluster_fsync.py": ("cluster_fsync.py", ["--batches", "50", "--senders", "1,4", "--rounds", "1", "--dir", WORK]),
    "cluster_scaling.py": ("cluster_scaling.py", ["--hosts", "6", "--pages-per-host", "10", "--workers", "1,2",
                                                  "--concurrency", "8", "--interval-s", "0.5", "--skip-reconfig",
                                                  "--out", WORK]),
    "cluster_transport.py": ("cluster_transport.py", ["--batches", "50", "--senders", "2"]),
    "cpu_split.py": ("cpu_split.py", ["--hosts", "4", "--pages-per-host", "10", "--work", WORK]),
    "crawlee_crawler.py": ("vs_scrapy.py", ["--only", "crawlee", "--hosts", "3", "--pages-per-host", "10",
                                            "--rounds", "1", "--concurrency", "8", "--timeout", "60", "--work", WORK]),
    "durability.py": ("durability.py", ["--kinds", "none", "--sizes", "6", "--mem-kinds", "none",
                                        "--kill-after-pages", "5", "--work", WORK]),
    "fetch_speed.py": ("fetch_speed.py", ["--requests", "300", "--concurrency", "4"]),
    "frontier_scale.py": ("frontier_scale.py", ["--toy", "--urls", "3000", "--hosts", "100", "--seen-keys", "5000",
                                                "--work", WORK]),
    "gnp_live.py": ("gnp_live.py", ["--toy", "--out", WORK]),
    "hostile_page.py": ("hostile_page.py", ["--variant", f"new={SRC}", "--timeout", "60", "--work", WORK]),
    "lean_crawler.py": ("vs_scrapy.py", ["--only", "lean", "--hosts", "3", "--pages-per-host", "10",
                                         "--rounds", "1", "--concurrency", "8", "--timeout", "60", "--work", WORK]),
    "nemesis.py": ("nemesis.py", ["--seed", "17", "--faults", "1", "--kinds", "stop", "--hosts", "4",
                                  "--pages-per-host", "8", "--work", WORK]),
    "nested_encoding.py": ("nested_encoding.py", ["--layers", "3", "--zeros-mb", "1"]),
    "node_ab.py": ("node_ab.py", ["--variant", f"a={SRC}", "--rounds", "1", "--hosts", "3", "--pages-per-host", "10",
                                  "--concurrency", "8", "--timeout", "60", "--work", WORK]),
    "node_crawl.py": ("node_crawl.py", ["--preset", "test", "--hosts", "3", "--pages-per-host", "10", "--concurrency", "8", "--out", WORK]),
    "opic_order.py": ("opic_order.py", ["--hosts", "3", "--pages-per-host", "20", "--rounds", "1",
                                        "--concurrency", "8", "--timeout", "60", "--work", WORK]),
    "parse_speed.py": ("parse_speed.py", ["--runs", "20"]),
    "proxy_speed.py": ("proxy_speed.py", ["--preset", "test", "--hosts", "3", "--pages-per-host", "10", "--rounds", "1",
                                          "--concurrency", "8", "--out", WORK]),
    "recrawl_freshness.py": ("recrawl_freshness.py", ["--hours", "1", "--hosts", "2", "--pages-per-host", "10",
                                                      "--baselines", "30", "--variants", "uniform:0.25"]),
    "render_crawl.py": ("render_crawl.py", ["--hosts", "1", "--pages-per-host", "6"]),
    "requisite_cost.py": ("requisite_cost.py", ["--runs", "20"]),
    "robots_handoff.py": ("robots_handoff.py", ["--hosts", "6", "--pages", "4", "--nodes", "2", "--buckets", "16",
                                                "--delay-s", "0.05", "--timeout-s", "120", "--work", WORK]),
    "robots_scale.py": ("robots_scale.py", ["--toy", "--out", WORK]),
    "scope_rules.py": ("scope_rules.py", ["--urls", "500", "--runs", "1"]),
    "scrapy_crawler.py": ("vs_scrapy.py", ["--only", "scrapy", "--hosts", "3", "--pages-per-host", "10",
                                           "--rounds", "1", "--concurrency", "8", "--timeout", "60", "--work", WORK]),
    "sitemap_index.py": ("sitemap_index.py", ["--hosts", "1", "--children", "20", "--urls", "200", "--run-s", "5",
                                              "--work", WORK]),
    "sitemap_route.py": ("sitemap_route.py", ["--urls", "2000"]),
    "sim_speed.py": ("sim_speed.py", ["--hosts", "20", "--refs", "20000", "--cache-size", "1024", "--des-hosts", "10"]),
    "store_speed.py": ("store_speed.py", ["--pages", "60", "--no-warcio"]),
    "testweb_server_cpu.py": ("testweb_server_cpu.py", ["--pages", "200", "--hosts", "4", "--pages-per-host", "60",
                                                        "--concurrency", "8"]),
    "vs_scrapy.py": ("vs_scrapy.py", ["--hosts", "3", "--pages-per-host", "10", "--rounds", "1", "--concurrency", "8",
                                      "--timeout", "60", "--workers-timeout", "60", "--work", WORK]),
}
PAGE_TIMES = {"cluster_scaling.py": '"pages_99_s": ', "gnp_live.py": "99%_s", "node_ab.py": "99 % s  last s",
              "node_crawl.py": '"pages_99_s": ', "opic_order.py": "99 % s  last s", "proxy_speed.py": "99 % of pages by",
              "render_crawl.py": "99 % of pages by", "vs_scrapy.py": "99 % of pages by"}
"""Benches that report pages/s report the time to 99 % of the pages and the last page's beside it: what they print."""
TIMEOUT_S = 240.0
"""Per bench, generous for a loaded machine (each takes a few seconds on a quiet one)."""


def test_every_bench_has_a_smoke_entry() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts - set(SMOKE) == set(), "add a toy-size entry to SMOKE for each new bench"
    assert set(SMOKE) - scripts == set(), "SMOKE names a bench that is gone"
    assert all((BENCH / runner).is_file() for runner, _ in SMOKE.values())


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_bench_runs_at_toy_size(script: str, tmp_path: Path) -> None:
    runner, args = SMOKE[script]
    work = tmp_path / "work"
    work.mkdir()
    command = [sys.executable, str(BENCH / runner), *(a.replace(WORK, str(work)) for a in args)]
    env = {**os.environ, "PYTHONPATH": str(SRC), "TMPDIR": str(tmp_path)}
    started = time.monotonic()
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)
    took = time.monotonic() - started
    tail = (done.stdout[-3000:] + "\n--- stderr\n" + done.stderr[-3000:]).strip()
    assert done.returncode == 0, f"{runner} {' '.join(args)}: exit {done.returncode} after {took:.1f} s\n{tail}"
    assert "Traceback" not in done.stderr, tail
    if script in PAGE_TIMES:
        assert PAGE_TIMES[script] in done.stdout, tail
