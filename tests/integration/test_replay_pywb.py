"""``webgather replay``: a crawl of the synthetic web, served through pywb, gives back the archived bytes.

pywb lives in an environment of its own (scripts/setup makes ``.venv-replay``;
``WEBGATHER_PYWB`` names another ``wayback``): these tests skip, saying so,
without it, and the browser test without Debian's chromium.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from pathlib import Path

import pytest

from webgather.runtime.launch.crawl import run_crawl
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, write_resolve
from replay_helpers import (
    CHROMIUM, archived_pages, chromium, fetch, find_wayback, index_by_record, ink_share, pid_alive, pywb_index,
    revisit_targets, start_replay, stop_replay,
)

WAYBACK = find_wayback()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        WAYBACK is None, reason="pywb not installed: ./scripts/setup makes .venv-replay, or set WEBGATHER_PYWB to a wayback"
    ),
]
_READY_S = 90.0


@pytest.fixture(scope="module")
def crawl_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("replay")

    async def crawl() -> None:
        model = WebModel(WebParams.for_tests())
        async with TestWebServer(model) as server:
            config = crawl_config(crawl_config_for(model.params), base / "out", write_resolve(server, base))
            summary = await run_crawl(config, [server.home_url(0)])
        assert summary["finished"] is True

    asyncio.run(crawl())
    return base / "out"


def test_our_index_is_what_pywbs_own_indexer_writes(crawl_dir: Path) -> None:
    """Key, timestamp, and every field, line for line: pywb can use the crawler's index as it is."""
    assert WAYBACK is not None
    ours = index_by_record((crawl_dir / "warc" / "index.cdxj").read_text().splitlines(keepends=True))
    theirs = index_by_record(pywb_index(WAYBACK, crawl_dir / "warc"))
    assert len(ours) > 100 and ours == theirs


def test_replayed_bodies_are_the_archived_payloads(crawl_dir: Path, tmp_path: Path) -> None:
    assert WAYBACK is not None
    pages = archived_pages(crawl_dir)
    assert len(pages) >= 100, f"the test web should give 100+ pages, got {len(pages)}"
    replay = start_replay(crawl_dir, WAYBACK)
    children: list[int] = []
    try:
        base = replay.read_until("open ", _READY_S).split()[1].rstrip("/")
        children = replay.children()
        assert base.startswith("http://127.0.0.1:") and base.endswith("/crawl")
        cut = _compare_every_page(base, pages)
        assert cut, "the test web's truncated and oversized pages should be among the captures"
        _screenshot_is_not_blank(replay.line("a page:").split()[2], tmp_path)
    finally:
        status = stop_replay(replay, children)
    assert status == 0, replay.lines[-20:]
    assert replay.lines[-1] == "replay stopped"
    assert children and not any(pid_alive(pid) for pid in children), "pywb outlived the replay command"


def _compare_every_page(base: str, pages: dict[tuple[str, str], list[bytes]]) -> list[str]:
    """Fetch every archived 200 page as ``/crawl/<ts>id_/<url>`` (the original bytes) and compare.

    A body cut while crawling (the server closed early, or over max_body_bytes)
    is replayed with its original Content-Length: the bytes that come are the
    archived ones, and the client sees a short body. Returns those URLs.
    """
    cut: list[str] = []
    for (stamp, url), bodies in sorted(pages.items()):
        status, body, complete = fetch(f"{base}/{stamp}id_/{url}")
        assert status == 200, f"{url}: replay status {status}"
        assert body in bodies, f"{url}: {len(body)} bytes replayed, archived {[len(b) for b in bodies]}"
        if not complete:
            cut.append(url)
    return cut


def _screenshot_is_not_blank(page_url: str, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium): bodies compared, no screenshot taken")
    shot = tmp_path / "replayed.png"
    done = chromium([f"--screenshot={shot}", page_url], tmp_path / "chromium")
    assert shot.is_file() and shot.stat().st_size > 0, done.stderr[-2000:]
    # pywb's banner is the top ~90 px; below it is the replayed page, black text on white
    assert ink_share(shot, top_px=100) > 0.005, f"{shot} looks blank below pywb's banner"
    frameless = page_url.replace("/http", "mp_/http", 1)  # the page alone, rewritten, without pywb's frame
    dom = chromium(["--dump-dom", frameless], tmp_path / "chromium").stdout
    assert "page 0 of h0001.web.test</title>" in dom, dom[:2000]


def test_a_cluster_layout_replays_from_nodes_dirs(crawl_dir: Path, tmp_path: Path) -> None:
    """``DIR/nodes/<node>/warc``: the index's file names become paths under DIR; nothing is copied.
    Killed (SIGKILL), the command takes pywb with it (PR_SET_PDEATHSIG)."""
    assert WAYBACK is not None
    cluster = tmp_path / "cluster"
    shutil.copytree(crawl_dir / "warc", cluster / "nodes" / "n0" / "warc")
    pages = archived_pages(cluster)
    replay = start_replay(cluster, WAYBACK)
    children: list[int] = []
    try:
        base = replay.read_until("open ", _READY_S).split()[1].rstrip("/")
        children = replay.children()
        for (stamp, url), bodies in sorted(pages.items())[:5]:
            status, body, _ = fetch(f"{base}/{stamp}id_/{url}")
            assert (status, body in bodies) == (200, True), url
        replay.process.send_signal(signal.SIGKILL)  # no clean-up here: pywb must still go with it
        replay.process.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(pid_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert children and not any(pid_alive(pid) for pid in children), "pywb outlived a killed replay command"
    finally:
        stop_replay(replay, children)
    assert not list((cluster).glob("**/config.yaml")), "the collection belongs in a temporary directory"


def test_urls_whose_key_pywb_canonicalizes_are_found(tmp_path: Path) -> None:
    """Unsorted query arguments, a trailing slash, an IP host, an escaped ``~``: pywb finds each by its key."""
    assert WAYBACK is not None
    from webgather.config import StoreConfig
    from webgather.fetch.model import FetchResult
    from webgather.store.warc import Archive

    urls = [
        "http://a.test/list?sort=new&page=3", "http://a.test/dir/", "http://127.0.0.1:8000/x", "http://a.test/%7Euser",
    ]
    archive = Archive.open(tmp_path / "out", "n0", StoreConfig())
    for n, url in enumerate(urls):
        body = f"<html><title>page {n}</title></html>".encode()
        archive.write_fetch(FetchResult(
            url=url, started_at=1_700_000_000.0 + n, elapsed_s=0.01, status=200, reason="OK",
            request_headers=(("Host", "a.test"),),
            response_headers=(("Content-Type", "text/html"), ("Content-Length", str(len(body)))),
            raw_body=body, body=body, peer_ip="127.0.0.1",
        ))
    archive.close()
    pages = archived_pages(tmp_path / "out")
    assert len(pages) == len(urls)
    index = (tmp_path / "out" / "warc" / "index.cdxj").read_text().splitlines(keepends=True)
    assert index_by_record(index) == index_by_record(pywb_index(WAYBACK, tmp_path / "out" / "warc"))
    replay = start_replay(tmp_path / "out", WAYBACK)
    children: list[int] = []
    try:
        base = replay.read_until("open ", _READY_S).split()[1].rstrip("/")
        children = replay.children()
        found = {url: fetch(f"{base}/{stamp}id_/{url}")[:2] for (stamp, url) in pages}
    finally:
        assert stop_replay(replay, children) == 0, replay.lines[-20:]
    assert found == {url: (200, bodies[0]) for (_, url), bodies in pages.items()}


def test_a_revisit_replays_its_originals_body(tmp_path: Path) -> None:
    """A re-crawl's revisit records (304, or the same digest) carry no body: pywb serves the original's,
    the newest capture included (a 304 revisit replayed as such would be an empty 304: pywbcoll repoints it)."""
    assert WAYBACK is not None
    from webgather.runtime.launch.crawl import run_cycle

    from recrawl_web import HOUR, T0, JumpClock, changing_web, recrawl_config

    async def two_cycles() -> None:
        clock = JumpClock(T0 + 60)
        async with TestWebServer(changing_web(), clock=clock) as server:
            config = recrawl_config(server, tmp_path)
            await run_cycle(config, [server.home_url(0)], clock=clock)
            clock.advance(HOUR)
            await run_cycle(config, clock=clock)

    asyncio.run(two_cycles())
    revisits = revisit_targets(tmp_path / "out")
    ours = index_by_record((tmp_path / "out" / "warc" / "index.cdxj").read_text().splitlines(keepends=True))
    theirs = index_by_record(pywb_index(WAYBACK, tmp_path / "out" / "warc"))
    # pywb's indexer leaves a revisit's status out; ours keeps its HTTP status (304 or 200), which replay uses
    assert ours.keys() == theirs.keys()
    assert {k: {f: v for f, v in b.items() if not (f == "status" and b["mime"] == "warc/revisit")}
            for k, b in ours.items()} == theirs
    assert {status for _, _, status, _ in revisits} == {"200", "304"}, "both revisit profiles should be there"
    replay = start_replay(tmp_path / "out", WAYBACK)
    children: list[int] = []
    try:
        base = replay.read_until("open ", _READY_S).split()[1].rstrip("/")
        children = replay.children()
        for stamp, url, _, original in revisits:
            assert fetch(f"{base}/{stamp}id_/{url}")[:2] == (200, original), url
            assert fetch(f"{base}/id_/{url}")[:2] == (200, original), f"{url}, its newest capture"
    finally:
        assert stop_replay(replay, children) == 0, replay.lines[-20:]
