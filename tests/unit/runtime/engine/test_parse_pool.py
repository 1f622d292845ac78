"""Parsing with a deadline (runtime.engine.parse_pool): the pre-scan, the parser processes, their end."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from webgather.config import ParseConfig, ScopeConfig, load
from webgather.errors import ConfigError
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.parse.links import ParsedPage, parse_page
from webgather.parse.sitemap import parse_sitemap
from webgather.runtime.engine.affinity import allowed_cpus, pinned
from webgather.runtime.engine.parse_pool import PARSE_TIMEOUT, ParseFailure, ParsePool, parse_inline
from webgather.runtime.engine.pipeline import HostFingerprints, RoutedUrls, extract, extract_parsed
from webgather.scope import Scope
from webgather.urls import fingerprint

DEEP = b"<html><body>" + b"<div>" * 500_000 + b"<a href=/x>x</a>" + b"</div>" * 500_000
"""The page of issue 13 (5.5 MB): lexbor needs minutes for it."""
HOSTILE = {
    "deep_div": DEEP,
    "misnested_formatting": b"<html><body>" + b"<a href=/y><b>" * 200_000,
    "nested_list": b"<html><body>" + b"<ul><li>" * 200_000,
    "table_div": b"<html><body><table>" + b"<div>" * 200_000,
}
PAGES = [
    b'<html><head><title> T </title><base href="/sub/"></head><body>'
    b'<a href="a">A <b>b</b></a><a rel="nofollow" href="/n">n</a><area href="/ar" alt="alt">'
    b'<iframe src="/if"></iframe><link rel="next" href="/2"><link rel=canonical href="/c">'
    b'<script>var x = "<a href=/no>";</script><p>visible text</p></body></html>',
    b'<meta name="robots" content="noindex, nofollow"><a href="http://other.test/x">x</a>',
    '<meta charset="windows-1251"><a href="/\u0436">\u0436</a>'.encode("cp1251"),
    b"",
    b"\xff\xfe garbage <a href='//h.test/q'>q",
]


def _config(**changes: object) -> ParseConfig:
    return dataclasses.replace(ParseConfig(), **changes)  # type: ignore[arg-type]


def test_the_prescan_counts_tags_and_bytes() -> None:
    config = _config(inline_max_tags=3, inline_max_bytes=100)
    assert parse_inline(b"<a><b><c>", config)
    assert not parse_inline(b"<a><b><c><d>", config)
    assert not parse_inline(b"x" * 101, config)
    assert parse_inline(b"x" * 100, config)
    assert not parse_inline(b"<a>", _config(inline_max_tags=0))
    assert not parse_inline(DEEP, ParseConfig())


async def test_pages_parsed_in_a_worker_equal_pages_parsed_inline() -> None:
    pool = ParsePool(_config(inline_max_tags=0))  # every page with a "<" goes to a worker
    try:
        for want_text in (True, False):
            for body in PAGES:
                got = await pool.parse("http://a.test/dir/p", body, "text/html", want_text=want_text)
                assert got == parse_page("http://a.test/dir/p", body, "text/html", want_text=want_text)
        assert pool.started == 1  # one process served them all
    finally:
        await pool.close()


async def test_ordinary_pages_stay_inline_and_start_no_process() -> None:
    pool = ParsePool(ParseConfig())
    for body in PAGES:
        assert isinstance(await pool.parse("http://a.test/", body, None, want_text=True), ParsedPage)
    assert pool.started == 0


async def _max_loop_gap_s(work: asyncio.Future[object] | asyncio.Task[object]) -> float:
    """Largest gap between 10 ms ticks of the loop while ``work`` runs."""
    gap, last = 0.0, time.perf_counter()
    while not work.done():
        await asyncio.sleep(0.01)
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    return gap


@pytest.mark.parametrize("shape", sorted(HOSTILE))
async def test_a_hostile_page_times_out_while_the_loop_keeps_running(shape: str) -> None:
    pool = ParsePool(_config(max_seconds=0.5))
    try:
        await pool.parse("http://a.test/", b"<p>" * 5000, None, want_text=True)  # start the worker
        first = pool.pids()
        started = time.perf_counter()
        task = asyncio.ensure_future(pool.parse("http://a.test/", HOSTILE[shape], None, want_text=True))
        gap_s = await _max_loop_gap_s(task)
        outcome = task.result()
        assert isinstance(outcome, ParseFailure) and outcome.kind == PARSE_TIMEOUT
        assert time.perf_counter() - started < 5.0
        assert gap_s < 0.25, f"the loop stood still for {gap_s:.3f} s"
        assert first and not _alive(first[0])  # killed, and reaped
        page = await pool.parse("http://a.test/", b"<a href=/z>z</a>" * 3000, None, want_text=False)
        assert isinstance(page, ParsedPage) and len(page.links) == 3000
        assert pool.started == 2  # a fresh process replaced the killed one
    finally:
        await pool.close()


async def test_workers_bounds_the_processes_and_max_seconds_is_the_deadline() -> None:
    body = b"<html><body>" + b"<div>" * 6000 + b"<a href=/x>x</a>"  # ~0.1 s of lexbor: under 3 s
    for workers in (1, 2):
        pool = ParsePool(_config(workers=workers, max_seconds=3.0))
        try:
            pages = await asyncio.gather(*(pool.parse("http://a.test/", body, None, want_text=True)
                                           for _ in range(4)))
            assert all(isinstance(p, ParsedPage) and len(p.links) == 1 for p in pages)
            assert pool.started == workers and len(pool.pids()) == workers
        finally:
            await pool.close()
    pool = ParsePool(_config(max_seconds=0.01))
    try:
        late = await pool.parse("http://a.test/", body, None, want_text=True)
        assert isinstance(late, ParseFailure) and late.kind == PARSE_TIMEOUT
    finally:
        await pool.close()


@pytest.mark.parametrize(("field", "value"), [("max_seconds", 0.0), ("workers", 0), ("inline_max_tags", -1),
                                              ("inline_max_bytes", -1)])
def test_parse_settings_are_checked(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match="parse"):
        load(cli={f"parse.{field}": value})


def test_parse_settings_load_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[parse]\nmax_seconds = 0.5\nworkers = 2\ninline_max_tags = 10\ninline_max_bytes = 99\n")
    assert load(path, env={}).parse == ParseConfig(0.5, 2, 10, 99)


async def test_inline_max_bytes_sends_a_large_page_with_few_tags_to_a_worker() -> None:
    body = b"<a href=/x>x</a>" + b"text " * 1000
    pool = ParsePool(_config(inline_max_bytes=1000))
    try:
        page = await pool.parse("http://a.test/", body, None, want_text=True)
        assert isinstance(page, ParsedPage) and page == parse_page("http://a.test/", body, None)
        assert pool.started == 1
    finally:
        await pool.close()


async def test_close_and_cancel_leave_no_process() -> None:
    pool = ParsePool(_config(max_seconds=60.0, workers=2))
    task = asyncio.ensure_future(pool.parse("http://a.test/", DEEP, None, want_text=True))
    other = asyncio.ensure_future(pool.parse("http://a.test/", DEEP, None, want_text=True))
    while len(pool.pids()) < 2:
        await asyncio.sleep(0.05)
    pids = pool.pids()
    task.cancel()  # the node's drain gave up on the page: its process must go too
    with pytest.raises(asyncio.CancelledError):
        await task
    await pool.close()
    other.cancel()
    await asyncio.gather(other, return_exceptions=True)
    assert not any(_alive(pid) for pid in pids)
    late = await pool.parse("http://a.test/", DEEP, None, want_text=True)
    assert isinstance(late, ParseFailure)  # a closed pool starts nothing


ORPHAN_SCRIPT = """
import asyncio, sys, time
from webgather.config import ParseConfig
from webgather.runtime.engine.parse_pool import ParsePool
async def main():
    pool = ParsePool(ParseConfig(max_seconds=float(sys.argv[1])))
    await pool.parse("http://a.test/", b"<p>" * 5000, None, want_text=True)
    print(pool.pids()[0], flush=True)
    if sys.argv[2] == "busy":
        await pool.parse("http://a.test/", b"<div>" * 500000, None, want_text=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


@pytest.mark.parametrize("state", ["idle", "busy"])
def test_a_parser_process_ends_when_its_node_is_killed(state: str, tmp_path: Path) -> None:
    script = tmp_path / "node.py"
    script.write_text(ORPHAN_SCRIPT)
    node = subprocess.Popen([sys.executable, str(script), "2.0", state], stdout=subprocess.PIPE, text=True)
    try:
        assert node.stdout is not None
        worker = int(node.stdout.readline())
        time.sleep(0.3)  # the busy one is in lexbor now
    finally:
        node.kill()  # kill -9: no cleanup runs in the node
        node.wait()
        if node.stdout is not None:
            node.stdout.close()
    deadline = time.monotonic() + 10.0  # busy: its own alarm at max_seconds + 1 ends it
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie is reaped by init, ours by our wait)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_extract_parsed_gives_no_links_and_the_error_kind_for_a_timed_out_page() -> None:
    url = "http://a.test/"
    scope = Scope(ScopeConfig(mode="any"), [url])
    item = CrawlItem(url, fingerprint(url), depth=0)
    pool = ParsePool(_config(max_seconds=0.3))
    try:
        for body, error, links in ((DEEP, PARSE_TIMEOUT, 0), (PAGES[0], None, 5)):
            result = FetchResult(url=url, started_at=0.0, elapsed_s=0.01, status=200,
                                 response_headers=(("Content-Type", "text/html"),), raw_body=body, body=body)
            got, decision = await extract_parsed(pool, item, result, Decision(parse="page"), scope,
                                                 HostFingerprints(), RoutedUrls())
            assert decision.error == error and got.links_found == links
            if error is None:  # the same as the synchronous path
                assert got == extract(item, result, Decision(parse="page"), scope, HostFingerprints(), RoutedUrls())
            else:
                assert got.items == [] and got.link_records is None
    finally:
        await pool.close()


SITEMAP = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.test/1</loc></url></urlset>'
SITEMAP_BOMB = gzip.compress(b"x\n" * (25 * 1024 * 1024), 9)
"""51 KB that gunzips to 50 MB of lines: a linear scan, but 1.6 s of it."""


async def test_sitemaps_inline_when_small_in_a_worker_when_gzipped_or_large() -> None:
    pool = ParsePool(_config(inline_max_bytes=len(SITEMAP)))
    try:
        assert await pool.parse_sitemap(SITEMAP) == parse_sitemap(SITEMAP) and pool.started == 0
        for body in (gzip.compress(SITEMAP), SITEMAP + b" "):
            assert await pool.parse_sitemap(body) == parse_sitemap(body)
        assert pool.started == 1
    finally:
        await pool.close()


async def test_a_sitemap_bomb_times_out_off_the_loop() -> None:
    pool = ParsePool(_config(max_seconds=0.2))
    try:
        await pool.parse_sitemap(gzip.compress(SITEMAP))  # start the worker
        task = asyncio.ensure_future(pool.parse_sitemap(SITEMAP_BOMB))
        gap_s = await _max_loop_gap_s(task)
        outcome = task.result()
        assert isinstance(outcome, ParseFailure) and outcome.kind == PARSE_TIMEOUT
        assert gap_s < 0.25
    finally:
        await pool.close()


async def test_extract_parsed_reads_sitemaps_through_the_pool() -> None:
    url = "http://a.test/sitemap.xml"
    scope = Scope(ScopeConfig(mode="any"), [url])
    item = CrawlItem(url, fingerprint(url), depth=0, kind="sitemap")
    pool = ParsePool(_config(max_seconds=0.2))
    try:
        for body, error in ((SITEMAP_BOMB, PARSE_TIMEOUT), (gzip.compress(SITEMAP), None)):
            result = FetchResult(url=url, started_at=0.0, elapsed_s=0.01, status=200, response_headers=(),
                                 raw_body=body, body=body)
            got, decision = await extract_parsed(pool, item, result, Decision(parse="sitemap"), scope,
                                                 HostFingerprints(), RoutedUrls())
            assert decision.error == error
            if error is None:
                assert got.items == [] and got.sitemap is not None  # routed a batch at a time by the node
                items = [i for batch in got.sitemap.batches(1000) for i in batch]
                assert items == extract(item, result, Decision(parse="sitemap"), scope, HostFingerprints(), RoutedUrls()).items
                assert [i.url for i in items] == ["http://a.test/1"]
            else:
                assert got.items == [] and got.links_found == 0
    finally:
        await pool.close()


async def test_parser_processes_may_use_the_cpus_the_nodes_pin_took_away() -> None:
    cpus = allowed_cpus()
    if cpus is None or len(cpus) < 2:
        pytest.skip("needs two allowed CPUs")
    pool = ParsePool(_config(inline_max_tags=0), cpus)
    try:
        with pinned("0") as cpu:  # as open_parts does; the worker starts from the pinned thread
            assert cpu is not None and os.sched_getaffinity(0) == {cpu}
            await pool.parse("http://a.test/", b"<p>x", None, want_text=True)
        assert os.sched_getaffinity(pool.pids()[0]) == cpus
    finally:
        await pool.close()
