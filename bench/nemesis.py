"""A nemesis: seeded random fault schedules against a real cluster crawl, and a checker of invariants.

Each schedule is its own fresh crawl: ``--nodes`` ``webgather`` node processes (each its own --out and
its own link to Redis through a proxy the nemesis cuts), Debian's redis-server, a shared store
(``--store file``: a directory on a tmpfs mounted here, root needed; ``--store s3``: moto's S3 server
on loopback) and the synthetic web served by a process of its own, whose closure is known. The
schedule draws ``--faults`` faults from the menu (tests/nemesis/nemesis_schedule.py: kill -9 with or
without the disk, SIGSTOP/SIGCONT, SIGTERM and restart, joins, a node whose clock runs at half speed,
the node<->Redis link refused or black-holed, Redis killed / restarted empty / FLUSHALL, the store full
or read-only (file) or down or black-holed (s3)) at moments in the first ``--window-s`` seconds, half
of those after a join in the 3 s after it. The checker (tests/nemesis/nemesis_checker.py): no closure
URL lost, DATA LOST iff a URL is lost, politeness from the web server's own records, refetches within
the bound, every process ended within ``--end-bound-s`` after the last heal, exit codes as documented.

    sudo .venv/bin/python bench/nemesis.py --schedules 20 --faults 3            # seeds 1..20
    sudo .venv/bin/python bench/nemesis.py --seed 17 --faults 3                 # replays schedule 17

Schedule k uses seed ``--first-seed + k``; a failing one prints its seed, faults and what the checker
saw, and ``--seed S`` (same ``--faults``, ``--nodes``, ``--window-s`` and ``--kinds``) replays it. Files
go under ``--work`` (default bench/results/nemesis, git-ignored), one directory per seed, and one JSON
line per schedule in ``results.jsonl`` there. Exit 0 iff every schedule passed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "cluster"), str(ROOT / "tests" / "nemesis")]

from nemesis_run import Result, Setup, record, run_schedule, summary_line  # noqa: E402
from nemesis_schedule import describe, draw, menu  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=1, help="schedules to run (seeds first-seed..)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--seed", type=int, default=None, help="run this one schedule (a replay)")
    parser.add_argument("--faults", type=int, default=3, help="faults per schedule")
    parser.add_argument("--kinds", default="", help="comma-separated subset of the menu (default: all)")
    parser.add_argument("--store", choices=("file", "s3"), default="file")
    parser.add_argument("--nodes", type=int, default=3, help="nodes at the start (joins come on top)")
    parser.add_argument("--hosts", type=int, default=Setup.hosts)
    parser.add_argument("--pages-per-host", type=float, default=Setup.pages)
    parser.add_argument("--delay-s", type=float, default=Setup.delay_s, help="politeness delay")
    parser.add_argument("--window-s", type=float, default=15.0, help="faults start in the first this many seconds")
    parser.add_argument("--end-bound-s", type=float, default=Setup.end_bound_s,
                        help="every process must have exited this long after the last heal")
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "nemesis")
    parser.add_argument("--keep", action="store_true", help="keep the files of passing schedules too")
    return parser


async def one(args: argparse.Namespace, setup: Setup, seed: int) -> Result:
    kinds = menu(args.store, tuple(k for k in args.kinds.split(",") if k) or None)
    faults = draw(seed, args.faults, args.nodes, kinds, args.window_s)
    work = args.work / f"seed-{seed}"
    shutil.rmtree(work, ignore_errors=True)
    print(f"seed {seed}: {describe(faults)}", flush=True)
    result = await run_schedule(work, setup, seed, faults)
    record(result, args.work / "results.jsonl")
    print(summary_line(result), flush=True)
    if not result.verdict.ok:
        for line in result.verdict.details:
            print(f"  {line}", flush=True)
        print(f"  replay: bench/nemesis.py --seed {seed} --faults {args.faults} --nodes {args.nodes} "
              f"--store {args.store} --window-s {args.window_s}" + (f" --kinds {args.kinds}" if args.kinds else ""),
              flush=True)
    elif not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


def table(results: list[Result], args: argparse.Namespace) -> str:
    v = [r.verdict for r in results]
    failing = [r.seed for r in results if not r.verdict.ok]
    return ("| schedules | failing | lost URLs | silent losses | false DATA LOST | hangs | stopped | "
            "politeness violations | refetches (outside bound) |\n|---|---|---|---|---|---|---|---|---|\n"
            f"| {len(results)} | {len(failing)} | {sum(x.lost for x in v)} | {sum(x.silent_loss for x in v)} | "
            f"{sum(x.false_alarm for x in v)} | {sum(x.hangs > 0 for x in v)} | {sum(x.stopped for x in v)} | "
            f"{sum(x.politeness for x in v)} | {sum(x.refetched for x in v)} ({sum(x.outside_bound for x in v)}) |\n"
            f"failing seeds: {' '.join(map(str, failing)) or 'none'}")


async def main() -> int:
    args = _parser().parse_args()
    setup = Setup(nodes=args.nodes, hosts=args.hosts, pages=args.pages_per_host, delay_s=args.delay_s,
                  store=args.store, end_bound_s=args.end_bound_s)
    try:
        menu(args.store, tuple(k for k in args.kinds.split(",") if k) or None)
    except ValueError as exc:
        _parser().error(str(exc))
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    seeds = [args.seed] if args.seed is not None else [args.first_seed + k for k in range(args.schedules)]
    results, broken = [], []
    for seed in seeds:
        try:
            results.append(await one(args, dataclasses.replace(setup), seed))
        except Exception as exc:  # noqa: BLE001 - a harness failure: say so, go on with the next seed
            broken.append(seed)
            print(f"seed {seed}: HARNESS ERROR {type(exc).__name__}: {exc}", flush=True)
    print(f"\n{table(results, args)}" + (f"\nharness errors (not judged): {' '.join(map(str, broken))}" if broken else ""),
          flush=True)
    return 0 if all(r.verdict.ok for r in results) and not broken else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
