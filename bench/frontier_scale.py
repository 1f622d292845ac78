"""Frontier at scale: seen-test throughput, disk tier at N entries, RSS and resume of N URLs.

Prints figures; not a test. Each part runs in its own process so its peak RSS
is its own (``ru_maxrss``); RssAnon (heap) and RssFile (mapped run files and
the like, which the kernel may reclaim) are read from ``/proc/self/status``.

* ``seen``: MemorySeen add/lookup in batches of 25, 1 000 and 100 000 keys;
  CachedSeen (CLOCK, 50 000 entries) on a stream with repeats.
* ``disk``: DiskSeen filled with ``--seen-keys`` random keys (memory tier 4 M,
  the default ``seen_memory_entries``), then batched lookups, half present.
* ``hotpath``: CPU per page of ``add`` (25 links) + ``next_ready`` + ``complete``,
  memory and persistent frontier, with all links new or 20 % new.
* ``frontier``: a persistent Frontier (default config) crawls a synthetic web:
  each step takes the next ready URL, adds its 25 links (20 on the same host,
  5 on random hosts of ``--hosts``; all new) and completes it, until
  ``--urls`` URLs are discovered. Then: close, reopen (resume) and the first
  ``next_ready``; then a crash (no close) after more work, and its resume.

    .venv/bin/python bench/frontier_scale.py                              # quick: 1 M
    .venv/bin/python bench/frontier_scale.py --urls 20000000 --seen-keys 20000000
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from webgather.cachepolicy import ClockCache
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import CachedSeen, MemorySeen
from webgather.frontier.seen_disk import DiskSeen
from webgather.urls import fingerprints

GIB = 1024**3


def rss() -> dict[str, float]:
    """Peak RSS and current anonymous / file-backed RSS, in MiB."""
    out = {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile"):
            out[name.lower() + "_mib"] = int(value.split()[0]) / 1024
    return out


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def sized(args: argparse.Namespace, n: int) -> int:
    """A fixed size of the bench, / 100 with ``--toy``."""
    return max(100, n // 100) if args.toy else n


# -- seen ---------------------------------------------------------------------------


def part_seen(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    n = args.seen_keys
    out: dict[str, Any] = {"keys": n}
    for batch in (25, 1000, sized(args, 100_000)):
        s = MemorySeen()
        keys = rng.integers(0, 2**64, size=min(n, sized(args, 200_000) if batch == 25 else n), dtype=np.uint64)
        t = time.perf_counter()
        for i in range(0, len(keys), batch):
            s.add_many(keys[i : i + batch])
        add_s = time.perf_counter() - t
        probe = np.concatenate((keys[: len(keys) // 2], rng.integers(0, 2**64, size=len(keys) // 2, dtype=np.uint64)))
        rng.shuffle(probe)
        t = time.perf_counter()
        for i in range(0, len(probe), batch):
            s.add_many(probe[i : i + batch])
        check_s = time.perf_counter() - t
        out[f"memory_batch{batch}"] = {"keys": len(keys), "add_keys_per_s": round(rate(len(keys), add_s)),
                                       "checks_per_s_half_seen": round(rate(len(probe), check_s)),
                                       "levels": s.levels, "bytes_per_key": round(s.nbytes / len(s), 2)}
    zipf = rng.zipf(1.3, size=sized(args, 500_000)).astype(np.uint64)
    cached = CachedSeen(MemorySeen(), ClockCache(sized(args, 50_000)))
    t = time.perf_counter()
    for i in range(0, len(zipf), 25):
        cached.add_many(zipf[i : i + 25])
    out["cached_clock50k_zipf1.3_batch25"] = {"checks_per_s": round(rate(len(zipf), time.perf_counter() - t)),
                                              "hit_rate": round(cached.hits / cached.lookups, 3)}
    out.update(rss())
    return out


def part_disk(args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(2)
    n = args.seen_keys
    directory = Path(args.work) / "disk-seen"
    shutil.rmtree(directory, ignore_errors=True)
    s = DiskSeen(directory, memory_entries=sized(args, 4_000_000))
    t = time.perf_counter()
    step = 100_000
    for i in range(0, n, step):
        s.add_many(rng.integers(0, 2**64, size=min(step, n - i), dtype=np.uint64))
    s.flush()
    fill_s = time.perf_counter() - t
    out: dict[str, Any] = {"keys": len(s), "runs": s.runs, "fill_keys_per_s": round(rate(n, fill_s))}
    present = np.concatenate([np.asarray(np.load(p, mmap_mode="r")[:: max(1, n // 1_000_000)][:500_000])
                              for p in sorted(directory.glob("run-*.npy"))])
    for batch in (25, 10_000):
        total = sized(args, 200_000 if batch == 25 else 2_000_000)
        probe = np.concatenate((rng.choice(present, size=total // 2), rng.integers(0, 2**64, size=total // 2, dtype=np.uint64)))
        rng.shuffle(probe)
        t = time.perf_counter()
        found = 0
        for i in range(0, total, batch):
            found += int(s.contains_many(probe[i : i + batch]).sum())
        out[f"lookup_batch{batch}"] = {"checks_per_s": round(rate(total, time.perf_counter() - t)),
                                       "found": found, "expected_found": total // 2}
    s.close()
    out["disk_mib"] = round(sum(p.stat().st_size for p in directory.iterdir()) / 2**20, 1)
    out.update(rss())
    shutil.rmtree(directory, ignore_errors=True)
    return out


# -- frontier --------------------------------------------------------------------------


class Web:
    """A synthetic stream of new URLs: 20 links on the page's host, 5 on random hosts."""

    def __init__(self, hosts: int, seed: int = 3) -> None:
        self.hosts = hosts
        self.rng = np.random.default_rng(seed)
        self.serial = 0

    def links(self, url: str, depth: int) -> list[CrawlItem]:
        host = url.split("/", 3)[2]
        others = self.rng.integers(0, self.hosts, size=5).tolist()
        names = [host] * 20 + [f"h{h}.site{h % 997}.example" for h in others]
        urls = []
        for name in names:
            self.serial += 1
            urls.append(f"http://{name}/section/{self.serial % 1000}/page-{self.serial}.html")
        fps = fingerprints(urls).tolist()
        return [CrawlItem(u, fp, depth + 1) for u, fp in zip(urls, fps)]


def crawl(f: Frontier, web: Web, until_seen: int, now: float) -> tuple[int, float]:
    pages, report_at = 0, 1_000_000
    while (seen := f.stats()["seen"]) < until_seen:
        if seen >= report_at:
            report_at += 1_000_000
            s = f.stats()
            print(f"  seen {seen:,} queued {s['queued']:,} in RAM {s['queued_in_memory']:,} {rss()}",
                  file=sys.stderr, flush=True)
        for _ in range(1000):
            now += 0.0005
            item, _ = f.next_ready(now)
            if item is None:
                raise RuntimeError("the synthetic crawl ran dry")
            f.add(web.links(item.url, item.depth), now)
            f.complete(item, now)
            pages += 1
    return pages, now


def part_frontier(args: argparse.Namespace) -> dict[str, Any]:
    state = Path(args.work) / "frontier-state"
    shutil.rmtree(state, ignore_errors=True)
    config, polite = FrontierConfig(), PolitenessConfig(min_delay_s=0.0, per_ip_connections=10**9)
    f = Frontier.open(state, config, polite)
    web = Web(args.hosts)
    seeds = [f"http://h{h}.site{h % 997}.example/" for h in range(min(args.hosts, 1000))]
    f.add([CrawlItem(u, fp) for u, fp in zip(seeds, fingerprints(seeds).tolist())], 0.0)
    t = time.perf_counter()
    pages, now = crawl(f, web, args.urls, 0.0)
    ingest_s = time.perf_counter() - t
    s = f.stats()
    out: dict[str, Any] = {"urls_seen": s["seen"], "queued": s["queued"], "hosts": s["hosts_total"],
                           "pages": pages, "ingest_s": round(ingest_s, 1),
                           "pages_per_s": round(rate(pages, ingest_s)), "urls_per_s": round(rate(s["seen"], ingest_s)),
                           "at_full": rss()}
    t = time.perf_counter()
    f.close()
    out["close_s"] = round(time.perf_counter() - t, 2)
    del f  # a closed frontier's heads are garbage: the resumes' peak RSS is their own
    out["state_mib"] = round(sum(p.stat().st_size for p in state.rglob("*") if p.is_file()) / 2**20)
    out["resume_clean"] = resume(state, config, polite)
    out["resume_after_crash"] = crash_and_resume(state, config, polite, web, now, sized(args, 18_000))
    out.update(rss())
    if not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    return out


def resume(state: Path, config: FrontierConfig, polite: PolitenessConfig) -> dict[str, Any]:
    t = time.perf_counter()
    g = Frontier.open(state, config, polite)
    open_s = time.perf_counter() - t
    item, _ = g.next_ready(1e6)
    first_s = time.perf_counter() - t
    assert item is not None
    s = g.stats()
    out = {"open_s": round(open_s, 2), "first_item_s": round(first_s, 2), "queued": s["queued"], "seen": s["seen"]}
    g.complete(item, 1e6)
    g.close()
    return out


def crash_and_resume(state: Path, config: FrontierConfig, polite: PolitenessConfig, web: Web, now: float,
                     pages: int) -> dict[str, Any]:
    """Crawl ``pages`` (18,000: 9 s of frontier time, just under a checkpoint) and stop without closing, in a child."""
    code = (
        "import sys, os; sys.path.insert(0, sys.argv[2]); import frontier_scale as b; from pathlib import Path\n"
        "from webgather.config import FrontierConfig, PolitenessConfig\n"
        "from webgather.frontier.frontier import Frontier\n"
        "f = Frontier.open(Path(sys.argv[1]), FrontierConfig(), PolitenessConfig(min_delay_s=0.0, per_ip_connections=10**9))\n"
        "w = b.Web(int(sys.argv[3]), seed=9); n = float(sys.argv[4])\n"
        "b.crawl(f, w, f.stats()['seen'] + int(sys.argv[5]) * 25, n)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(state), str(Path(__file__).parent), str(web.hosts), str(now), str(pages)],
                   check=True, timeout=3600)
    journal = sum(p.stat().st_size for p in state.glob("journal-*.log"))
    out = resume(state, config, polite)
    out["journal_mib_replayed"] = round(journal / 2**20, 1)
    return out


def part_hotpath(args: argparse.Namespace) -> dict[str, Any]:
    """CPU per page of add(25 links) + next_ready + complete, memory vs persistent frontier."""
    out: dict[str, Any] = {}
    pages = sized(args, 20_000)
    for mode in ("memory", "persistent"):
        for new_share in (1.0, 0.2):
            state = None if mode == "memory" else Path(args.work) / "hot-state"
            if state is not None:
                shutil.rmtree(state, ignore_errors=True)
            f = Frontier.open(state, FrontierConfig(), PolitenessConfig(min_delay_s=0.0, per_ip_connections=10**9))
            web = Web(2000, seed=5)
            batches = [web.links(f"http://h{i % 2000}.site{i % 997}.example/", 1) for i in range(pages)]
            old = [it for b in batches[:200] for it in b]
            rng = np.random.default_rng(6)
            if new_share < 1.0:  # most links of a page were seen before, as in a real crawl
                batches = [b[: int(25 * new_share)] + [old[int(k)] for k in rng.integers(0, len(old), 25 - int(25 * new_share))]
                           for b in batches]
            f.add(batches[0], 0.0)
            t, now, done = time.process_time(), 0.0, 0
            for batch in batches[1:]:
                now += 0.001
                item, _ = f.next_ready(now)
                if item is None:
                    break
                f.add(batch, now)
                f.complete(item, now)
                done += 1
            cpu = time.process_time() - t
            f.close()
            out[f"{mode}_new{int(new_share * 100)}pct"] = {"pages": done, "cpu_us_per_page": round(cpu / done * 1e6)}
    return out


PARTS = {"seen": part_seen, "disk": part_disk, "frontier": part_frontier, "hotpath": part_hotpath}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--urls", type=int, default=1_000_000, help="URLs discovered by the frontier part")
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--seen-keys", type=int, default=2_000_000, help="entries of the disk tier part")
    parser.add_argument("--parts", default="hotpath,seen,disk,frontier")
    parser.add_argument("--work", default=None, help="directory for state (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the frontier state")
    parser.add_argument("--toy", action="store_true", help="every fixed size / 100 (a smoke run of seconds)")
    parser.add_argument("--part", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        print(json.dumps(PARTS[args.part](args)))
        return 0
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="frontier-scale-"))
    try:
        for part in args.parts.split(","):
            cmd = [sys.executable, __file__, "--part", part, "--work", str(work), "--urls", str(args.urls),
                   "--hosts", str(args.hosts), "--seen-keys", str(args.seen_keys)] + (["--keep"] if args.keep else []) \
                + (["--toy"] if args.toy else [])
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
            if proc.returncode:
                return proc.returncode
            print(f"== {part}")
            print(json.dumps(json.loads(proc.stdout), indent=2), flush=True)
    finally:
        if not args.work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
