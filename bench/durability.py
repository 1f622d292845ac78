"""The durability table and Redis's peak memory, with and without a shared store.

Runs the scenario of tests/cluster/test_shared_store_durability.py (3 node processes with separate
--out directories, node b killed -9 mid-crawl and its --out deleted) and prints closure, archived,
missing, refetched and the refetch bound; then crawls the synthetic web at two sizes with 3 nodes
(no kill) and prints Redis's ``used_memory_peak`` (INFO memory) for each.

    .venv/bin/python bench/durability.py --rounds 1 --sizes 100,400

Files go under --work (default bench/results/durability, git-ignored).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "cluster")]

from durability_helpers import run_scenario  # noqa: E402
from s3_helpers import moto_s3  # noqa: E402


async def _one(work: Path, kind: str, **kw: object) -> str:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if kind == "s3":
        with moto_s3("wg-bench"):
            outcome = await run_scenario(work, "s3://wg-bench/crawl", **kw)  # type: ignore[arg-type]
    else:
        url = (work / "shared").as_uri() if kind == "file" else None
        outcome = await run_scenario(work, url, **kw)  # type: ignore[arg-type]
    extra = f"  redis peak {outcome.redis_peak_bytes / 2**20:.2f} MiB  exit {outcome.exit_codes}"
    return f"{kind:5s} {outcome.row()}{extra}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kinds", default="none,file,s3")
    parser.add_argument("--kill-after-pages", type=int, default=20, help="node b is killed once it fetched this many")
    parser.add_argument("--sizes", default="100,400", help="hosts of the no-kill memory runs (about 20 pages each)")
    parser.add_argument("--mem-kinds", default="none,file", help="stores of the no-kill memory runs")
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "durability")
    args = parser.parse_args()
    for r in range(args.rounds):
        for kind in args.kinds.split(","):
            line = await _one(args.work / kind, kind, kill_after_pages=args.kill_after_pages)
            print(f"kill -9 + delete, round {r + 1}: {line}", flush=True)
    for hosts in (int(h) for h in args.sizes.split(",") if h):
        for kind in args.mem_kinds.split(","):
            line = await _one(args.work / f"mem-{kind}-{hosts}", kind, n_hosts=hosts, fault="none", min_delay_s=0.0,
                              mean_pages_per_host=20.0, timeout_s=600.0, checkpoint_s=10.0,
                              claim_idle_s=30.0, very_slow_s=16.0)  # fetch timeout ~0.9 s: no timeouts from load
            print(f"no kill, {hosts} hosts: {line}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
