"""Where one node's CPU goes, per page: each thread's CPU time split among named parts.

Crawls vs_scrapy's static web once (the same export, nginx and command line as
bench/node_ab.py) while two things watch the crawler process:

* ``/proc/PID/task/*/stat``, read every 50 ms: each thread's CPU time (user +
  system), the last value seen before it ended;
* ``py-spy record --pid PID --threads -f raw`` (pip install py-spy): sampled stacks
  of every thread.

A thread's samples are sorted into parts by the deepest frame that names one
(``PARTS``, leaf first), and the thread's measured CPU is divided among its parts
in proportion to their samples. The leaf frames of a wait, the writer's
``queue.get`` and uvloop's own C code under ``Runner.run``, are parts of their own:
py-spy's idle filter does not tell the writer's wait from its work (with and
without ``--idle`` its samples in ``queue.get`` stood in the same ratio to those in
deflate), so that part is an upper bound and the others, shares of the thread's
measured CPU, are lower bounds. Figures are ms of CPU per
fetched page. Not a test: a sampling profile is an estimate (a part's share is
good to about a percent of its thread).

    .venv/bin/python bench/cpu_split.py                      # native core
    WEBGATHER_NATIVE=0 .venv/bin/python bench/cpu_split.py   # the pure-Python parse path
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import node_ab  # noqa: E402
import vs_scrapy as vs  # noqa: E402

PARTS: tuple[tuple[str, str], ...] = (
    # (frame name as py-spy prints it, part); the deepest frame that matches wins
    ("gzip_unit", "writer: gzip (ISA-L)"),
    ("sha1_digest", "writer: WARC records, SHA-1"),
    ("append_bytes", "writer: file writes"),
    ("fetch_records", "writer: WARC records, SHA-1"),
    ("Archive._encode", "writer: WARC records, SHA-1"),
    ("Archive.write_fetch", "writer: WARC other"),
    ("LinkLog", "writer: link log, anchors"),
    ("ArchiveWriter._flush_logs", "writer: crawl log, CDXJ"),
    ("ArchiveWriter._finish", "writer: crawl log, CDXJ"),
    ("ParsePool.parse", "loop: parse (lexbor + links)"),
    ("_links_of", "loop: links -> fingerprints, cache"),
    ("Router.route", "loop: routing"),
    ("CrawlNode.add_local", "loop: frontier add, seen-test"),
    ("Frontier.complete", "loop: frontier complete, journal"),
    ("RobotsDriver", "loop: robots admission"),
    ("WriterPort", "loop: hand-over to writer"),
    ("FencedHttp.fetch", "loop: HTTP exchange"),
    ("CrawlNode._process", "loop: page bookkeeping"),
    ("CrawlNode.run", "loop: scheduling"),
    ("_find_and_load", "start: imports"),
)
LEAF_PARTS = (("ArchiveWriter._get ", "writer: queue get (waits and wake-ups)"), ("Runner.run ", "loop: uvloop (C: poll, sockets)"))


def part_of(frames: list[str], thread: str) -> str:
    for name, part in LEAF_PARTS:
        if frames and frames[-1].startswith(name):
            return part
    for frame in reversed(frames):
        for name, part in PARTS:
            if frame.startswith(name + " ") or frame.startswith(name + "."):
                return part
    return "writer: other" if "webgather-store" in thread else "loop: other (asyncio, callbacks, set-up)"


def thread_cpu_s(pid: int, seen: dict[str, float]) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        seen[tid] = (int(fields[11]) + int(fields[12])) / tick


def crawl_watched(cmd: list[str], raw: Path | None) -> tuple[dict[str, float], float, int]:
    """Per-thread CPU seconds by TID, wall seconds, exit code; py-spy's samples in ``raw`` (None: not sampled)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(proc.pid), "--threads", "-r", "250", "-f", "raw",
                            "-o", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if raw else None
    cpu: dict[str, float] = {}
    while proc.poll() is None:
        thread_cpu_s(proc.pid, cpu)
        time.sleep(0.05)
    wall = time.perf_counter() - started
    if spy is not None:
        spy.wait(timeout=60)
    return cpu, wall, proc.returncode


def split(raw: Path, cpu: dict[str, float]) -> dict[str, float]:
    """CPU seconds per part: each thread's measured CPU spread over its samples."""
    by_thread: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        tid = frames[0].split("(")[1].split(")")[0].strip()  # "thread (TID): NAME"
        by_thread[tid][part_of(frames[1:], frames[0])] += int(count)
    out: collections.Counter[str] = collections.Counter()
    for tid, parts in by_thread.items():
        total = sum(parts.values())
        for part, n in parts.items():
            out[part] += cpu.get(tid, 0.0) * n / total
    return dict(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    node_ab.add_web_arguments(parser, rounds=1, hosts=400, pages_per_host=20.0, work="cpu_split")
    args = parser.parse_args()
    spy = shutil.which("py-spy") is not None
    if not spy:
        print("cpu_split: py-spy is not on PATH (pip install py-spy): threads' CPU only, the split into parts "
              "is skipped", flush=True)
    servers_conf, port, resolve, _config, seed = node_ab.prepare_web(args)
    cmd = vs.webgather_crawler("webgather", seed, resolve, args, None).command(args.work / "scratch")
    with vs.nginx(servers_conf, args.work / "nginx", port, "127.0.1.1"):
        shutil.rmtree(args.work / "scratch", ignore_errors=True)
        (args.work / "scratch").mkdir()
        cpu, wall, code = crawl_watched(cmd, args.work / "spy.txt" if spy else None)
    pages = int(json.loads((args.work / "scratch" / "out" / "summary.json").read_text())["pages"])
    if pages == 0:
        raise SystemExit(f"cpu_split: the crawl fetched no page (exit {code}; see {args.work / 'scratch'})")
    parts = split(args.work / "spy.txt", cpu) if spy else {}
    print(f"cpu_split: {pages} pages in {wall:.2f} s (exit {code}), "
          f"native core {'off' if os.environ.get('WEBGATHER_NATIVE') == '0' else 'on'}; "
          f"threads' CPU {sum(cpu.values()):.2f} s = {sum(cpu.values()) / pages * 1e3:.3f} ms/page")
    for part, seconds in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds / pages * 1e3:6.3f} ms/page  {part}")
    if parts:
        print(f"  {sum(parts.values()) / pages * 1e3:6.3f} ms/page  (sampled threads)")
    return code


if __name__ == "__main__":
    sys.exit(main())
