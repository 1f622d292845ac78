"""Memory of a crawl whose hosts each serve one small gzip page that decodes to tens of MB.

    .venv/bin/python bench/big_pages.py --hosts 64 --page-mb 50          # the probe: 64 hosts, 50 MB pages
    .venv/bin/python bench/big_pages.py --hosts 8 --page-mb 50 --src /tmp/base/src   # another source tree

Every host (``b0000.test``...) serves ``/`` as one HTML page of ``--page-mb`` MB (10**6 bytes) of
``<div><a href="/leaf/N">..</a> <span>..</span></div>`` rows (3 tags per 90 bytes, 5 distinct
links), sent gzip-compressed (about 340 KB for 50 MB), and ``/leaf/0`` .. ``/leaf/4``, small pages;
``/robots.txt`` is a 404. A resolve file maps every name to 127.0.0.1, where one server process (this
script with ``--serve``) answers by path. ``webgather crawl`` of the given source tree crawls every
host at once (``--delay 0``, ``--per-ip`` = ``--concurrency``), in its own session; every 50 ms the
bench reads the RSS (``/proc/PID/statm``) and PSS (``/proc/PID/smaps_rollup``) of each process in
the crawl's process tree (the node and the parser processes it starts).

Prints one JSON line: peak RSS and PSS of the whole tree (summed at one instant), the node's peak
RSS, the largest parser process's peak RSS (MiB), the crawl's CPU (itself and its reaped children),
wall time, and from the crawl log: big pages logged, those parsed (links found), their error kinds,
leaves fetched (of 5 per host). Exits 1 if a big page was not parsed (no links: no crawl-log
line, or ``parse_timeout``) or ``--max-tree-mib`` is given and the tree's peak RSS passed it.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LEAVES = 5
ROW = b'<div class="row"><a href="/leaf/%d">item %d</a> <span>lorem ipsum dolor sit amet</span></div>\n'
LEAF = b"<html><head><title>leaf</title></head><body>leaf</body></html>"
MiB = 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")


def big_page(size: int) -> bytes:
    """``size`` bytes of HTML: a head, then rows until the end (the last one cut, as a long page may be)."""
    head = b'<!doctype html><html><head><title>big</title><link rel="canonical" href="/"></head><body>\n'
    rows = b"".join(ROW % (i % LEAVES, i % 150) for i in range(150 * LEAVES))
    body = head + rows * (size // len(rows) + 1)
    return body[:size - 15] + b"</body></html>\n"


# -- the server: one process, every host, by path ----------------------------------------------------

def serve(port: int, page_mb: float) -> int:
    import asyncio

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    gz = gzip.compress(big_page(int(page_mb * 1e6)), 6, mtime=0)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                if path == b"/":
                    extra, body, status = b"Content-Encoding: gzip\r\n", gz, 200
                elif path.startswith(b"/leaf/"):
                    extra, body, status = b"", LEAF, 200
                else:
                    extra, body, status = b"", b"not here", 404
                writer.write(b"HTTP/1.1 %d X\r\nContent-Type: text/html\r\n%sContent-Length: %d\r\n\r\n"
                             % (status, extra, len(body)) + body)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def forever() -> None:
        server = await asyncio.start_server(answer, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(forever())
    return 0


# -- sampling the crawl's process tree ---------------------------------------------------------------

@dataclass
class Peaks:
    tree_rss: int = 0
    tree_pss: int = 0
    node_rss: int = 0
    parser_rss: int = 0
    parsers_seen: set[int] = field(default_factory=set)


def _descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        p = stack.pop()
        with contextlib.suppress(OSError, ValueError):
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(c) for c in f.read().split()]
                found += kids
                stack += kids
    return found


def _rss_pss(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of ``pid`` in bytes; (0, 0) if it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE
        pss = rss
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
        return rss, pss
    except (OSError, ValueError, IndexError):
        return 0, 0


def sample(root: int, peaks: Peaks) -> None:
    node_rss, node_pss = _rss_pss(root)
    tree_rss, tree_pss = node_rss, node_pss
    for pid in _descendants(root):
        rss, pss = _rss_pss(pid)
        tree_rss, tree_pss = tree_rss + rss, tree_pss + pss
        peaks.parser_rss = max(peaks.parser_rss, rss)
        peaks.parsers_seen.add(pid)
    peaks.tree_rss, peaks.tree_pss = max(peaks.tree_rss, tree_rss), max(peaks.tree_pss, tree_pss)
    peaks.node_rss = max(peaks.node_rss, node_rss)


def run_crawl(command: list[str], cwd: Path, timeout_s: float) -> tuple[int, float, float, Peaks]:
    """(exit status, wall s, CPU s, peaks) of the crawl, run in its own session, killed after ``timeout_s``."""
    peaks = Peaks()
    with open(cwd / "stdout.txt", "wb") as out, open(cwd / "stderr.txt", "wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                start_new_session=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - started > timeout_s:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the crawl's own session: only what it started
            sample(proc.pid, peaks)
            time.sleep(0.05)
    wall = time.perf_counter() - started
    return os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime, peaks


# -- one run ---------------------------------------------------------------------------------------

def outcomes(log: Path, hosts: int) -> dict[str, Any]:
    big: dict[str, dict[str, Any]] = {}
    leaves = 0
    for line in log.read_text().splitlines() if log.exists() else []:
        entry = json.loads(line)
        if entry.get("kind") != "page" or entry.get("retry"):
            continue
        if entry["url"].endswith("/"):
            big[entry["url"]] = entry
        elif "/leaf/" in entry["url"] and entry.get("status") == 200:
            leaves += 1
    errors = Counter(str(e.get("error")) for e in big.values() if e.get("error"))
    return {"big_logged": len(big), "big_parsed": sum(1 for e in big.values() if (e.get("links") or 0) > 0),
            "big_errors": dict(errors), "leaves": leaves, "leaves_due": LEAVES * hosts}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    names = [f"b{i:04d}.test" for i in range(args.hosts)]
    (work / "resolve.txt").write_text("".join(f"{n} 127.0.0.1\n" for n in names))
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--page-mb", str(args.page_mb)],
                              stdin=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        (work / "seeds.txt").write_text("".join(f"http://{n}:{port}/\n" for n in names))
        code = (f"import sys; sys.path.insert(0, {str(args.src.resolve())!r}); "
                "from webgather.cli import main; sys.exit(main())")
        command = [sys.executable, "-c", code, "crawl", f"@{work / 'seeds.txt'}", "--out", str(work / "out"),
                   "--resolve", str(work / "resolve.txt"), "--allow-address", "127.0.0.1/32", "--delay", "0",
                   "--concurrency", str(args.concurrency), "--per-ip", str(args.concurrency), "--no-progress",
                   "--no-requisites", *args.crawl_arg]
        status, wall, cpu, peaks = run_crawl(command, work, args.timeout)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
    return {"hosts": args.hosts, "page_mb": args.page_mb, "exit": status, "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "tree_rss_mib": round(peaks.tree_rss / MiB), "tree_pss_mib": round(peaks.tree_pss / MiB),
            "node_rss_mib": round(peaks.node_rss / MiB), "parser_rss_mib": round(peaks.parser_rss / MiB),
            "parser_processes": len(peaks.parsers_seen), **outcomes(work / "out" / "crawl.log.jsonl", args.hosts)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"the bench server did not start on port {port}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--page-mb", type=float, default=50.0, help="decoded size of each host's page, 10**6 bytes")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=600.0, help="the crawl is killed after this many seconds")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the source tree to crawl with")
    parser.add_argument("--max-tree-mib", type=float, default=None, help="exit 1 if the tree's peak RSS passes it")
    parser.add_argument("--crawl-arg", action="append", default=[], help="an extra argument to webgather crawl")
    parser.add_argument("--work", type=Path, default=Path("/tmp/webgather-big-pages"))
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        return serve(args.serve, args.page_mb)
    figures = run(args)
    print(json.dumps(figures), flush=True)
    over = args.max_tree_mib is not None and figures["tree_rss_mib"] > args.max_tree_mib
    return 1 if over or figures["big_parsed"] < args.hosts else 0


if __name__ == "__main__":
    sys.exit(main())
