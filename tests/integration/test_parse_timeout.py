"""Issue 13: a page whose parse never ends must not freeze a node.

A loopback server (127.0.0.1, port chosen by the OS) serves a small site whose home
page links six ordinary pages and the 5.5 MB page of the issue (``<div>`` x 500,000
around one link), which lexbor needs minutes for. The crawl must finish with the
ordinary pages parsed and the hostile one recorded as ``parse_timeout``; and a crawl
process sent SIGTERM while it parses that page must end within seconds, leaving no
parser process behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from webgather.config import CrawlConfig, FetchConfig, ParseConfig, PolitenessConfig
from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log

DEEP = b"<html><body>" + b"<div>" * 500_000 + b"<a href=/never>x</a>" + b"</div>" * 500_000
ORDINARY = [f"/p{i}" for i in range(6)]


def _site() -> dict[str, bytes]:
    links = "".join(f'<a href="{path}">{path}</a>' for path in [*ORDINARY[:3], "/deep", *ORDINARY[3:]])
    site = {"/": f"<html><body>{links}</body></html>".encode()}
    for path in ORDINARY:
        site[path] = f'<html><body><p>{path}</p><a href="/">home</a><a href="{path}/leaf">leaf</a></body></html>'.encode()
        site[f"{path}/leaf"] = b"<html><body>leaf</body></html>"
    site["/deep"] = DEEP
    return site


class Site:
    """A keep-alive HTTP/1.1 server of :func:`_site` (robots.txt: 404); records the paths served."""

    def __init__(self) -> None:
        self.pages = _site()
        self.served: list[str] = []
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                body = self.pages.get(path)
                status = "200 OK" if body is not None else "404 Not Found"
                body = body if body is not None else b"not here"
                writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n"
                             .encode() + body)
                await writer.drain()
                self.served.append(path)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    server = await asyncio.start_server(site.serve, "127.0.0.1", 0)
    site.port = server.sockets[0].getsockname()[1]
    try:
        yield site
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), 5.0)


async def test_the_crawl_goes_on_and_the_hostile_page_is_parse_timeout(site: Site, tmp_path: Path) -> None:
    config = dataclasses.replace(
        CrawlConfig(), out_dir=str(tmp_path / "out"), progress=False,
        politeness=PolitenessConfig(min_delay_s=0.0), parse=ParseConfig(max_seconds=1.0),
        fetch=FetchConfig(allow_addresses=("127.0.0.0/8",)),  # the destination guard lets the loopback site in
    )
    started = time.monotonic()
    summary = await asyncio.wait_for(run_crawl(config, [site.url("/")]), 60.0)
    wall_s = time.monotonic() - started
    entries = {e["url"]: e for e in read_crawl_log(tmp_path / "out" / "crawl.log.jsonl") if e.get("kind") == "page"}
    assert entries[site.url("/deep")]["error"] == "parse_timeout"
    assert entries[site.url("/deep")]["links"] == 0 and entries[site.url("/deep")]["bytes"] == len(DEEP)
    for path in ["/", *ORDINARY]:
        assert entries[site.url(path)]["error"] is None and entries[site.url(path)]["links"] >= 2, path
    for path in ORDINARY:  # found only by parsing the ordinary pages
        assert entries[site.url(f"{path}/leaf")]["error"] is None
    assert site.url("/never") not in entries
    assert summary["finished"] and summary["errors"].get("parse_timeout") == 1
    assert wall_s < 30.0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if parent == str(pid):
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_sigterm_during_a_hostile_parse_ends_the_crawl_within_seconds(site: Site, tmp_path: Path) -> None:
    env = {**os.environ, "WEBGATHER_PARSE__MAX_SECONDS": "300"}  # the deadline is not what ends it
    crawl = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", "crawl", site.url("/"), "--out", str(tmp_path / "out"),
        "--delay", "0", "--no-progress", "--allow-address", "127.0.0.0/8", env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30.0
        while "/deep" not in site.served and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert "/deep" in site.served
        await asyncio.sleep(1.0)  # the page is in a parser process's lexbor by now
        parsers = _children(crawl.pid)
        assert parsers, "no parser process under the crawl"
        started = time.monotonic()
        crawl.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(crawl.wait(), 30.0)
        stop_s = time.monotonic() - started
    finally:
        if crawl.returncode is None:
            crawl.kill()
            await crawl.wait()
    assert code == 0
    assert stop_s < 10.0, f"SIGTERM took {stop_s:.1f} s"
    assert not any(_alive(pid) for pid in parsers)
