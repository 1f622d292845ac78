"""Faults of a 3-node cluster crawl, one row each: what survives what.

Runs tests/cluster/durability_helpers.run_scenario: 3 ``webgather`` node processes (a starts the crawl,
b and c join), each with its own --out as on separate machines, one Redis (redis-server started here, an
AOF with ``appendfsync always``), a shared store (``file://``; ``--store none`` for none), the synthetic
web served on loopback by this process (24 hosts of 40 pages, equal sizes, delay 0.5 s, every
fixture but the two traps). Once node b fetched ``--kill-after-pages`` pages and checkpointed
``--crawled-s`` seconds after its first fetch, the fault:

* ``kill_delete``: b killed -9 and its --out deleted (machine and disk lost);
* ``stop``: b SIGSTOPped for ``--pause-s`` (past its 1 s lease), then SIGCONT;
* ``kill_restart``: b killed -9; once the others recovered its buckets, started again with the same --out;
* ``term``: b sent SIGTERM (graceful leave: it hands its buckets over);
* ``redis_restart``: the Redis process killed -9 and started again from its data ``--pause-s`` later;
* ``none``: no fault (the baseline of the figures).

Columns:

* closure: URLs of the web's closure whose final fetch has a response; archived: those with a response
  record in a surviving WARC (shared store or a surviving node's --out); missing: the difference.
* refetched: URLs with more than one final fetch over every node's crawl log; bound: the pages b started
  since its last checkpoint's snapshot before the fault (2 s margin for those in flight then), the README's
  bound for ``[cluster] checkpoint_s``. With ``--store none`` it is b's pages at the fault and bounds
  nothing: b's buckets restart empty, their earlier owners' pages are fetched again too (exit 4).
* politeness: from the test web server's own request records, per host, successive requests that
  overlapped ("at once") or came less than the delay minus 0.1 s apart ("short"; requests the crawler
  timed out on are excused: its clock counts from its timeout). "resent": short gaps that are the
  transport's one re-send of a GET on a new connection after a kept-alive one was reset with no response
  byte (RFC 9112 9.3.1, issue 13 item 7), counted apart.
* recover_s: the server's page responses per second over 1 s windows starting every 0.1 s from the
  fault, against the rate in the 5 s before it. If a window starting within 5 s of the fault is under
  half that rate (the dip), the figure is the start of the first window from the dip on that is back at
  half or more (or the last response, if none is); with no dip, 0. Measured from the fault. The ``none`` row is
  the same figure with no fault, at the moment the fault would have come.
* hosts back s (node faults): from the fault to the first request, by any node, to a host of the
  buckets b held at its last checkpoint (how long b's hosts went unserved).
* redis peak: the highest ``used_memory_peak`` (INFO memory) sampled every 0.25 s.

    .venv/bin/python bench/cluster_faults.py --rounds 3

Files go under --work (default bench/results/cluster_faults, git-ignored). ``--rounds N`` prints each
run's row as it ends, then the median of every column per fault.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "cluster")]

from durability_helpers import FAULTS, Outcome, run_scenario  # noqa: E402
from fault_figures import median  # noqa: E402

from webgather.testweb.params import FaultRates  # noqa: E402

COLUMNS = ("closure", "archived", "missing", "refetched", "bound", "at once", "short", "resent",
           "recover_s", "hosts back s", "redis peak MiB")


def figures(o: Outcome) -> dict[str, float | None]:
    return {"closure": o.closure, "archived": o.archived, "missing": len(o.missing), "refetched": o.refetched,
            "bound": o.bound, "at once": o.at_once, "short": o.short_gaps, "resent": o.resends,
            "recover_s": round(o.recover_s, 1),
            "hosts back s": None if o.hosts_back_s is None else round(o.hosts_back_s, 1), "redis peak MiB": round(o.redis_peak_bytes / 2**20, 2)}


def table(rows: list[tuple[str, dict[str, Any], str]]) -> str:
    lines = ["| fault | " + " | ".join(COLUMNS) + " | exit codes |", "|---" * (len(COLUMNS) + 2) + "|"]
    for name, values, codes in rows:
        lines.append(f"| {name} | " + " | ".join("-" if values[c] is None else str(values[c]) for c in COLUMNS)
                     + f" | {codes} |")
    return "\n".join(lines)


async def one(work: Path, fault: str, store: str, args: argparse.Namespace) -> Outcome:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    url = (work / "shared").as_uri() if store == "file" else None
    # the endless-calendar and deep-path traps of h0001 end the crawl with a long one-host tail
    web = {} if args.traps else {"faults": dataclasses.replace(FaultRates(), calendar=0.0, deep_path=0.0)}
    return await run_scenario(work, url, fault=fault, **web, n_hosts=args.hosts, mean_pages_per_host=args.pages_per_host,
                              pages_sigma=args.pages_sigma, min_delay_s=args.delay_s,
                              kill_after_pages=args.kill_after_pages, crawled_s=args.crawled_s,
                              pause_s=args.pause_s, timeout_s=args.timeout_s)


def median_of(values: list[float | None]) -> float | None:
    """The median of the runs that have the figure (None: none has it)."""
    present = [v for v in values if v is not None]
    return round(median(present), 2) if present else None


def exit_codes(outcome: Outcome) -> str:
    return " ".join(f"{node}={code}" for node, code in outcome.exit_codes.items())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--faults", default="none,kill_delete,stop,kill_restart,term,redis_restart")
    parser.add_argument("--store", choices=("file", "none"), default="file")
    parser.add_argument("--hosts", type=int, default=24)
    parser.add_argument("--pages-per-host", type=float, default=40.0)
    parser.add_argument("--pages-sigma", type=float, default=0.0,
                        help="spread of the hosts' sizes (lognormal); 0: equal hosts, a steady crawl rate")
    parser.add_argument("--traps", action="store_true", help="keep the calendar and deep-path traps")
    parser.add_argument("--delay-s", type=float, default=0.5, help="politeness delay ([politeness] min_delay_s)")
    parser.add_argument("--kill-after-pages", type=int, default=30)
    parser.add_argument("--crawled-s", type=float, default=5.0, help="b's checkpoint this long after its first fetch")
    parser.add_argument("--pause-s", type=float, default=4.0, help="SIGSTOP length; Redis's time away")
    parser.add_argument("--timeout-s", type=float, default=240.0)
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "cluster_faults")
    args = parser.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        parser.error(f"unknown fault(s) {', '.join(unknown)}; choose from {', '.join(FAULTS)}")
    runs: dict[str, list[Outcome]] = {f: [] for f in faults}
    for r in range(args.rounds):
        for fault in faults:
            outcome = await one(args.work / fault, fault, args.store, args)
            runs[fault].append(outcome)
            print(f"round {r + 1}: {table([(fault, figures(outcome), exit_codes(outcome))]).splitlines()[-1]}"
                  + (f"  politeness: {'; '.join(outcome.politeness_examples)}" if outcome.politeness_examples else ""),
                  flush=True)
    rows = [(f, {c: median_of([figures(o)[c] for o in runs[f]]) for c in COLUMNS},
             " / ".join(exit_codes(o) for o in runs[f])) for f in faults]
    print(f"\nmedians of {args.rounds} round(s), store {args.store}:\n{table(rows)}")


if __name__ == "__main__":
    asyncio.run(main())
