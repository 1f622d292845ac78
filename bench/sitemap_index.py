"""RSS and SIGTERM latency of a crawl whose hosts each name a huge sitemap index.

Loopback servers (a thread of this process), one per host on 127.0.0.2, 127.0.0.3, ...
(so the per-IP cap does not serialize them), each serve ``robots.txt`` naming
``/index.xml``, an index of ``--children`` sitemaps of ``--urls`` page URLs each, and
tiny pages. ``webgather crawl`` of ``--tree`` (``PYTHONPATH``-style: that tree's
``webgather`` is imported) crawls every host (``--delay 0``) for ``--run-s`` seconds;
then SIGTERM. Printed: peak RSS of the crawl and its children (the parser process) and
the RSS when the signal went, the time from SIGTERM to exit, the exit code, whether every
WARC record reads back with its digests, and the sitemaps and pages logged. With
``--max-depth 1`` the listed pages are out of scope and the crawl ends by itself once every
sitemap within the per-host budgets is read: peak RSS is then what reading them costs.

    .venv/bin/python bench/sitemap_index.py --tree /tmp/base/src --hosts 8 --run-s 40
    .venv/bin/python bench/sitemap_index.py --tree src --hosts 8 --run-s 40
    .venv/bin/python bench/sitemap_index.py --tree src --hosts 16 --children 8 --max-depth 1 --run-s 600
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import vs_scrapy as vs  # noqa: E402  (tree_rss_kib: RSS of a process and its descendants)

NS = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


class IndexSite:
    """One host: robots.txt -> /index.xml -> /sN.xml (``urls`` pages each) -> pages."""

    def __init__(self, children: int, urls: int) -> None:
        self.children, self.urls = children, urls
        self.base = b""
        self.index = self.urlset = self.robots = b""

    def build(self, base: str) -> None:
        self.base = base.encode()
        self.index = b"<sitemapindex " + NS + b">" + b"".join(
            b"<sitemap><loc>%s/s%d.xml</loc></sitemap>" % (self.base, n) for n in range(self.children)
        ) + b"</sitemapindex>"
        self.urlset = b"<urlset " + NS + b">" + b"".join(
            b"<url><loc>%s/pNNNN-%d</loc></url>" % (self.base, n) for n in range(self.urls)) + b"</urlset>"
        self.robots = b"User-agent: *\nAllow: /\nSitemap: " + self.base + b"/index.xml\n"

    def body(self, path: str) -> tuple[bytes, bytes]:
        if path == "/robots.txt":
            return self.robots, b"text/plain"
        if path == "/index.xml":
            return self.index, b"application/xml"
        if path.startswith("/s") and path.endswith(".xml"):
            return self.urlset.replace(b"NNNN", path[2:-4].encode()), b"application/xml"
        return b"<html><body>a page</body></html>", b"text/html"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body, kind = self.body(head.split(b" ", 2)[1].decode())
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (kind, len(body)))
                writer.write(body)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def start_sites(hosts: int, children: int, urls: int) -> list[str]:
    """Start the servers in a daemon thread; their base URLs."""
    bases: list[str] = []
    ready = threading.Event()

    async def main() -> None:
        for n in range(hosts):
            site = IndexSite(children, urls)
            address = f"127.0.0.{2 + n}"
            server = await asyncio.start_server(site.serve, address, 0)
            base = f"http://{address}:{server.sockets[0].getsockname()[1]}"
            site.build(base)
            bases.append(base)
        ready.set()
        await asyncio.Event().wait()

    threading.Thread(target=asyncio.run, args=(main(),), daemon=True).start()
    if not ready.wait(120):
        raise SystemExit("sitemap_index: the servers did not start")
    return bases


def warcs_valid(out: Path) -> tuple[bool, int]:
    """(every record reads back with its digests, response records)."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    responses = 0
    try:
        for path in sorted(out.rglob("*.warc.gz")):
            with path.open("rb") as stream:
                for record in ArchiveIterator(stream, check_digests="raise"):
                    record.raw_stream.read()
                    responses += record.rec_type == "response"
    except (ArchiveLoadFailed, ValueError, OSError):
        return False, responses
    return True, responses


def run(args: argparse.Namespace, bases: list[str]) -> dict[str, object]:
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    code = f"import sys; sys.path.insert(0, {str(Path(args.tree).resolve())!r}); from webgather.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", code, "crawl", *[b + "/" for b in bases], "--out", str(work / "out"),
               "--delay", "0", "--no-progress", "--allow-address", "127.0.0.0/8",
               *(["--max-depth", str(args.max_depth)] if args.max_depth is not None else [])]
    with open(work / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        peak, samples, started = 0, [], time.monotonic()
        while time.monotonic() - started < args.run_s and proc.poll() is None:
            rss = vs.tree_rss_kib(proc.pid)
            peak = max(peak, rss)
            samples.append((time.monotonic() - started, rss))
            time.sleep(0.25)
        at_signal = vs.tree_rss_kib(proc.pid)
        ended = proc.poll() is not None
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        while proc.poll() is None and time.monotonic() - sent < args.kill_after_s:
            peak = max(peak, vs.tree_rss_kib(proc.pid))
            time.sleep(0.05)
        stop_s = time.monotonic() - sent
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the run's own session: only what it started
            proc.wait()
    late = [rss for t, rss in samples if t >= args.run_s / 2]
    growth = (late[-1] - late[0]) / 1024 / (args.run_s / 2) if len(late) > 1 else 0.0
    kinds = Counter(json.loads(line).get("kind") for line in (work / "out" / "crawl.log.jsonl").read_text().splitlines()
                    if line.strip()) if (work / "out" / "crawl.log.jsonl").exists() else Counter()
    valid, responses = warcs_valid(work / "out")
    summary = work / "out" / "summary.json"
    queued = json.loads(summary.read_text()).get("urls_new") if summary.exists() else None
    return {"tree": args.tree, "hosts": len(bases), "wall_s": round(sent - started, 1), "peak_rss_mib": round(peak / 1024), "rss_at_sigterm_mib":
            round(at_signal / 1024), "rss_growth_mib_s_2nd_half": round(growth, 2), "sigterm_to_exit_s":
            None if ended else round(stop_s, 2), "exit": proc.returncode, "warc_valid": valid, "warc_responses": responses,
            "sitemaps": kinds["sitemap"], "pages": kinds["page"], "urls_queued": queued,
            "rss_mib_every_5s": [round(rss / 1024) for t, rss in samples[::20]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", default="src", help="source tree whose webgather runs (default: src)")
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--children", type=int, default=50_000, help="sitemaps in each host's index")
    parser.add_argument("--urls", type=int, default=50_000, help="page URLs in each sitemap")
    parser.add_argument("--run-s", type=float, default=40.0, help="seconds before SIGTERM (if it has not ended)")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="1: the sitemaps' pages are out of scope, so the crawl ends once every sitemap is "
                             "read (the memory of reading them, not of a growing frontier)")
    parser.add_argument("--kill-after-s", type=float, default=60.0, help="SIGKILL if not ended this long after SIGTERM")
    parser.add_argument("--work", default="/tmp/sitemap_index_bench")
    args = parser.parse_args()
    bases = start_sites(args.hosts, args.children, args.urls)
    print(json.dumps(run(args, bases)))


if __name__ == "__main__":
    main()
