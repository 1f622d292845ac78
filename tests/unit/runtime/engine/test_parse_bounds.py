"""The parse pool's memory bounds (runtime.engine.parse_pool, parse.html_bound): a large page is parsed
from a prefix within ``parse.max_bytes`` and ``max_tags``, and a body goes to a parser process without
a second copy of it in the node."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from webgather.config import ParseConfig, ScopeConfig, load
from webgather.errors import ConfigError
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.parse.html_bound import html_prefix_length
from webgather.parse.links import ParsedPage, parse_page
from webgather.parse.sitemap import parse_sitemap
from webgather.runtime.engine.parse_pool import PARSE_FAILED, PARSE_TRUNCATED, ParseFailure, ParsePool
from webgather.runtime.engine.pipeline import HostFingerprints, RoutedUrls, extract_parsed
from webgather.scope import Scope
from webgather.urls import fingerprint

MiB = 1024 * 1024
ROW = b'<div class="row"><a href="/leaf/%d">item</a> <span>lorem ipsum dolor sit amet</span></div>\n'
ROWS = b"".join(ROW % (i % 7) for i in range(70))
DENSE = b"<html><head><title>big</title></head><body>\n" + ROWS * (16 * MiB // len(ROWS))
"""16 MiB of rows of three tags: lexbor's tree of all of it takes about 300 MiB."""


def _config(**changes: object) -> ParseConfig:
    return dataclasses.replace(ParseConfig(), **changes)  # type: ignore[arg-type]


def _status_mib(pid: int, field: str) -> float:
    """``VmHWM`` (peak RSS) or ``VmRSS`` of ``pid``, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field}")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/PID/status")
async def test_a_page_over_the_bounds_is_parsed_from_its_prefix_and_its_parser_stays_small() -> None:
    url = "http://a.test/"
    pool = ParsePool(_config(max_bytes=MiB, max_tags=40_000))
    try:
        page = await pool.parse(url, DENSE, "text/html", want_text=True)
        cut = html_prefix_length(DENSE, MiB, 40_000)
        assert cut < MiB and DENSE[:cut].count(b"<") == 40_000
        assert page == dataclasses.replace(parse_page(url, DENSE[:cut], "text/html"), cut_at=cut)
        assert isinstance(page, ParsedPage) and {link.url for link in page.links} == {
            f"http://a.test/leaf/{n}" for n in range(7)}
        peak = _status_mib(pool.pids()[0], "VmHWM")
        assert peak < 150, peak  # the whole page: over 300 MiB
        small = await pool.parse(url, DENSE[:300_000], "text/html", want_text=True)
        assert isinstance(small, ParsedPage) and small.cut_at is None  # within both bounds: whole
    finally:
        await pool.close()


ATTRIBUTES = b"<i a b c d e f g h i j k l m n o p q r s t u v w x y z>" * 140_000
"""7.8 MB, 140,000 tags: within both prefix bounds, but its tree takes about 1 GB (an attribute costs 2 bytes)."""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA, /proc/PID/status")
async def test_a_parse_that_needs_more_than_max_memory_fails_and_its_process_lives_on() -> None:
    pool = ParsePool(_config(max_memory=200 * MiB))
    try:
        failed = await pool.parse("http://a.test/", ATTRIBUTES, "text/html", want_text=True)
        assert isinstance(failed, ParseFailure) and failed.kind == PARSE_FAILED, failed
        pid = pool.pids()[0]
        assert _status_mib(pid, "VmHWM") < 260
        page = await pool.parse("http://a.test/", DENSE[:MiB], "text/html", want_text=True)
        assert page == parse_page("http://a.test/", DENSE[:MiB], "text/html")
        assert pool.pids() == [pid] and pool.started == 1
    finally:
        await pool.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, /proc/PID/status")
async def test_a_parser_process_gives_its_heap_back_after_a_large_page() -> None:
    pool = ParsePool(ParseConfig())
    try:
        page = await pool.parse("http://a.test/", DENSE, "text/html", want_text=True)
        assert isinstance(page, ParsedPage) and page.cut_at is not None  # the default bounds: 8 MiB
        pid = pool.pids()[0]
        assert _status_mib(pid, "VmHWM") > 150  # the tree of 8 MiB of rows
        deadline = time.monotonic() + 20.0
        while (resident := _status_mib(pid, "VmRSS")) > 100 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # trimmed once the reply is sent
        assert resident <= 100, resident  # untrimmed: 190 MiB until the next page
    finally:
        await pool.close()


async def test_a_body_goes_to_a_parser_process_without_a_second_copy_in_the_node() -> None:
    body = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a.test/1</loc></url>'
    body += b" " * (24 * MiB) + b"</urlset>"
    pool = ParsePool(ParseConfig())
    try:
        await pool.parse_sitemap(b"\x1f\x8b")  # start the worker (a gzip body goes to it) before measuring
        tracemalloc.start()
        try:
            doc = await pool.parse_sitemap(body)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert doc == parse_sitemap(body) and pool.started == 1
        assert peak < 4 * MiB, peak / MiB  # pickled whole and buffered whole: 48 MiB
    finally:
        await pool.close()


async def test_extract_parsed_follows_the_links_of_a_prefix_and_logs_parse_truncated() -> None:
    url = "http://a.test/"
    scope = Scope(ScopeConfig(mode="any"), [url])
    item = CrawlItem(url, fingerprint(url), depth=0)
    body = b"<html><body>" + b"".join(b'<p><a href="/%d">%d</a>' % (n, n) for n in range(100))
    pool = ParsePool(_config(inline_max_tags=10, max_tags=30))
    try:
        for keep_page in (False, True):
            result = FetchResult(url=url, started_at=0.0, elapsed_s=0.01, status=200,
                                 response_headers=(("Content-Type", "text/html"),), raw_body=body, body=body)
            got, decision = await extract_parsed(pool, item, result, Decision(parse="page"), scope,
                                                 HostFingerprints(), RoutedUrls(), keep_page=keep_page)
            assert decision.error == PARSE_TRUNCATED
            # 30 "<": <html>, <body>, 9 x <p><a></a>, the 10th <p>
            assert [i.url for i in got.items] == [f"http://a.test/{n}" for n in range(9)]
            assert (got.page is not None) == keep_page
    finally:
        await pool.close()


@pytest.mark.parametrize("cli", [{"parse.max_bytes": 0}, {"parse.max_tags": 0}, {"parse.max_memory": 64 * MiB},
                                 {"parse.max_bytes": 1000, "parse.inline_max_bytes": 1001},
                                 {"parse.max_tags": 100, "parse.inline_max_tags": 101}])
def test_the_bounds_are_checked(cli: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="parse"):
        load(cli=cli)


def test_the_bounds_load_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[parse]\nmax_bytes = 2000000\nmax_tags = 9000\nmax_memory = 300000000\n")
    assert load(path, env={}).parse == _config(max_bytes=2_000_000, max_tags=9000, max_memory=300_000_000)
