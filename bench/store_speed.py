"""How fast the archive writes: records/s and CPU microseconds per 13 KB page.

Pages are templated HTML (markup, 25 links, Zipf-distributed words): they
gzip about 2.5-3x, harder than typical sites (3-6x), so the figure errs slow.

Per page: Archive.write_fetch (response + request records, sha1 digests,
one gzip member each) + CrawlLog.append + LinkLog.append_page with 25 links.
Also: the same records through warcio's WARCWriter (why records.py builds its
own bytes), the cost the event loop pays per ArchiveWriter.submit_fetch, and
optionally read_link_graph over a synthetic N-link log.

    .venv/bin/python bench/store_speed.py [--pages 3000] [--graph-links 25000000]
        [--backends default] [--no-warcio] [--flush-every 0 4]
"""

from __future__ import annotations

import argparse
import io
import itertools
import random
import shutil
import tempfile
import time
import zlib
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from webgather.config import StoreConfig
from webgather.fetch.model import FetchResult
from webgather.store import gzmember
from webgather.store import warc as warc_module
from webgather.store.crawllog import CrawlLog
from webgather.store.graphread import read_link_graph
from webgather.store.linklog import EDGE_DTYPE, LinkLog
from webgather.store.warc import Archive
from webgather.store.writer import ArchiveWriter, _Job
from webgather.urls import fingerprint, host_key

DEFAULT_DEFLATER = gzmember._deflater
PAGE_BYTES = 13 * 1024
LINKS_PER_PAGE = 25
NAV = (
    '<meta charset="utf-8"><link rel="stylesheet" href="/static/site.css"><script src="/static/app.js"></script>'
    '<nav class="top"><ul><li><a href="http://%s/">Home</a></li><li><a href="/about">About us</a></li>'
    '<li><a href="/contact">Contact</a></li><li><a href="/news">News</a></li><li><a href="/archive">Archive</a></li></ul></nav>'
)


def make_pages(count: int, seed: int = 1) -> list[tuple[FetchResult, dict[str, object], list[tuple[str, int, int, str, bool]]]]:
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(5000)]
    zipf = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))  # cum_weights: same draws, faster
    pages = []
    for i in range(count):
        host = f"h{i % 97}.example"
        url = f"http://{host}/p/{i}"
        links = []
        parts = [f"<html><head><title>{' '.join(rng.choices(words, cum_weights=zipf, k=6))}</title>{NAV % host}</head><body>"]
        for j in range(LINKS_PER_PAGE):
            dst = f"http://h{(i + j * 7) % 97}.example/p/{rng.randrange(count * 10)}"
            anchor = " ".join(rng.choices(words, cum_weights=zipf, k=3))
            links.append((dst, fingerprint(dst), fingerprint(host_key(dst)), anchor, False))
            parts.append(f'<li class="nav-item"><a class="link" href="{dst}">{anchor}</a></li>\n')
        while sum(map(len, parts)) < PAGE_BYTES - 200:
            parts.append('<p class="text">' + " ".join(rng.choices(words, cum_weights=zipf, k=25)) + "</p>\n")
        body = ("".join(parts) + "</body></html>").encode()[:PAGE_BYTES]
        result = FetchResult(
            url=url, started_at=1.7e9 + i, elapsed_s=0.05, status=200, reason="OK",
            request_headers=(("Host", host), ("User-Agent", "webgather/0.1"), ("Accept", "*/*"), ("Accept-Encoding", "gzip")),
            response_headers=(("Server", "bench"), ("Content-Type", "text/html; charset=utf-8"),
                              ("Content-Length", str(len(body))), ("Date", "Tue, 14 Nov 2023 22:13:20 GMT")),
            raw_body=body, body=body, peer_ip="127.0.0.1",
        )
        entry: dict[str, object] = {"url": url, "host": host, "status": 200, "error": None, "bytes": len(body),
                                    "fetched_at": 1.7e9 + i, "kind": "page", "depth": 3, "elapsed_s": 0.05,
                                    "content_type": "text/html", "retry": False, "redirect": None, "links": 25}
        pages.append((result, entry, links))
    return pages


def use_deflate(backend: str) -> str:
    """Switch the archive's deflate: "default" (isal level 1 when installed) or "zlib-N"."""
    if backend == "default":
        gzmember._deflater = DEFAULT_DEFLATER
        warc_module.GZIP_LEVEL = None
        return f"{gzmember.DEFLATE_BACKEND} level {gzmember.DEFAULT_LEVEL}"
    gzmember._deflater = zlib
    warc_module.GZIP_LEVEL = int(backend.split("-")[1])
    return f"zlib {zlib.ZLIB_RUNTIME_VERSION} level {warc_module.GZIP_LEVEL}"


def bench_direct(pages: list, out: Path) -> tuple[float, float, int]:
    archive = Archive.open(out, "bench", StoreConfig())
    log = CrawlLog.open(out / "crawl.log.jsonl")
    links = LinkLog.open(out)
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for result, entry, page_links in pages:
        ref = archive.write_fetch(result)
        assert ref is not None
        log.append({**entry, "warc_file": ref.filename, "warc_offset": ref.offset, "digest": ref.payload_digest})
        links.append_page(result.url, fingerprint(result.url), fingerprint(host_key(result.url)), page_links)
    log.close()
    links.close()
    archive.close()
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    size = sum(p.stat().st_size for p in (out / "warc").glob("*.warc.gz"))
    return wall, cpu, size


def bench_warcio(pages: list) -> tuple[float, float]:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    writer = WARCWriter(io.BytesIO(), gzip=True, warc_version="1.1")
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    for result, _, _ in pages:
        headers = StatusAndHeaders("200 OK", list(result.response_headers), protocol="HTTP/1.1")
        response = writer.create_warc_record(result.url, "response", payload=io.BytesIO(result.raw_body),
                                             http_headers=headers, warc_headers_dict={"WARC-IP-Address": "127.0.0.1"})
        req_headers = StatusAndHeaders("GET /p HTTP/1.1", list(result.request_headers), is_http_request=True)
        request = writer.create_warc_record(result.url, "request", payload=io.BytesIO(b""), http_headers=req_headers)
        writer.write_request_response_pair(request, response)
    return time.perf_counter() - wall0, time.thread_time() - cpu0


def bench_writer(pages: list, out: Path, flush_every: int = 0) -> tuple[float, float, float, float]:
    """Submit every page; ``flush_every`` > 0 also queues a flush job (without
    waiting for it) after every that many pages, as WriterPort's coalesced
    flushes do in a crawl. Returns wall s, the submitter's CPU, the writer
    thread's own CPU (its thread clock, read before close) and full-queue waits."""
    writer = ArchiveWriter.open(out, "bench", StoreConfig(), queue_max_items=1024)
    clock = time.pthread_getcpuclockid(writer._thread.ident or 0)
    wall0, cpu0, thread0 = time.perf_counter(), time.thread_time(), time.clock_gettime(clock)
    flushes = []
    for n, (result, entry, page_links) in enumerate(pages, 1):
        writer.submit_fetch(result, entry, page_links)
        if flush_every and n % flush_every == 0:
            done: Future[None] = Future()
            writer._put(_Job("flush", done=done))
            flushes.append(done)
    submit_cpu = time.thread_time() - cpu0
    writer.flush()
    thread_cpu = time.clock_gettime(clock) - thread0
    writer.close()
    assert all(f.done() for f in flushes)
    return time.perf_counter() - wall0, submit_cpu, thread_cpu, writer.stats().full_queue_waits


def bench_graph(n_links: int, out: Path) -> None:
    rng = np.random.default_rng(7)
    n_pages, n_hosts = max(n_links // 25, 1), max(n_links // 2500, 1)
    page_fp = rng.integers(0, 2**63, size=n_pages, dtype=np.uint64)
    host_of = rng.integers(0, n_hosts, size=n_pages)
    host_fp = rng.integers(0, 2**63, size=n_hosts, dtype=np.uint64)
    edges = np.empty(n_links, dtype=EDGE_DTYPE)
    src = rng.integers(0, n_pages, size=n_links)
    dst = np.minimum(rng.zipf(1.8, size=n_links) - 1, n_pages - 1)
    edges["src"], edges["dst"] = page_fp[src], page_fp[dst]
    edges["src_host"], edges["dst_host"] = host_fp[host_of[src]], host_fp[host_of[dst]]
    edges.tofile(out / "links.bin")
    with (out / "crawl.log.jsonl").open("w") as handle:
        for i in range(n_pages):
            host = f"h{i % n_hosts}.example"
            handle.write(f'{{"url":"http://{host}/p/{i}","host":"{host}","status":200,"kind":"page"}}\n')
    t0 = time.perf_counter()
    graph = read_link_graph(out, anchor_urls=False)
    print(f"read_link_graph: {n_links:,} links, {graph.n_pages:,} pages, {graph.n_hosts:,} hosts "
          f"(crawl log {n_pages:,} lines) in {time.perf_counter() - t0:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--graph-links", type=int, default=0)
    parser.add_argument("--backends", default="zlib-1,zlib-6,default", help="direct runs, comma-separated")
    parser.add_argument("--no-warcio", action="store_true", help="skip the warcio comparison")
    parser.add_argument("--flush-every", type=int, nargs="*", default=[0],
                        help="ArchiveWriter runs: 0 = no flush jobs, N = a flush job after every N pages")
    args = parser.parse_args()
    pages = make_pages(args.pages)
    body_bytes = sum(len(p[0].raw_body) for p in pages) / len(pages)
    print(f"{args.pages} pages of {body_bytes / 1024:.1f} KiB, {LINKS_PER_PAGE} links each")
    root = Path(tempfile.mkdtemp(prefix="store-bench-"))
    try:
        for backend in args.backends.split(","):
            name = use_deflate(backend)
            wall, cpu, size = bench_direct(pages, root / backend)
            print(f"direct, {name}: {len(pages) / wall:,.0f} pages/s, {cpu / len(pages) * 1e6:,.0f} CPU us/page, "
                  f"WARC {size / len(pages) / 1024:.1f} KiB/page")
        if not args.no_warcio:
            wall, cpu = bench_warcio(pages)
            print(f"warcio WARCWriter (records only, no logs): {len(pages) / wall:,.0f} pages/s, {cpu / len(pages) * 1e6:,.0f} CPU us/page")
        for flush_every in args.flush_every:
            label = f", a flush every {flush_every} pages" if flush_every else ""
            wall, submit_cpu, thread_cpu, waits = bench_writer(pages, root / f"writer{flush_every}", flush_every)
            print(f"ArchiveWriter (thread{label}): {len(pages) / wall:,.0f} pages/s end to end, "
                  f"writer thread {thread_cpu / len(pages) * 1e6:,.0f} CPU us/page, caller pays "
                  f"{submit_cpu / len(pages) * 1e6:,.1f} CPU us/submit, {waits} full-queue waits")
        if args.graph_links:
            (root / "graph").mkdir()
            bench_graph(args.graph_links, root / "graph")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
