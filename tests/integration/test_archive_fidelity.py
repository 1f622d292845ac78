"""Fidelity in headless Chromium: the site's pages (a stylesheet that @imports the one that colours the
page, a srcset image, a CDN script, a meta refresh target), crawled, then replayed through pywb from the
crawl directory and from the WACZ: each replayed screenshot matches the live page's, and a crawl
without requisites replays visibly different (the test can tell)."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from webgather.cli import main
from webgather.runtime.launch.crawl import run_crawl

from archive_site import CDN, SITE, ArchiveSite
from replay_helpers import CHROMIUM, find_wayback, start_replay, stop_replay

WAYBACK = find_wayback()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(WAYBACK is None, reason="pywb not installed: ./scripts/setup makes .venv-replay"),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install chromium)"),
]
PAGES = ("/", "/new.html")
MAX_DIFFERENT = 0.01
"""Share of pixels that may differ between a live and a replayed screenshot."""


def _shoot(url: str, shot: Path, user_dir: Path) -> Path:
    command = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--no-default-browser-check", f"--user-data-dir={user_dir}", "--window-size=800,600",
        f"--host-resolver-rules=MAP {SITE} 127.0.0.1, MAP {CDN} 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--virtual-time-budget=5000", f"--screenshot={shot}", url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert shot.is_file() and shot.stat().st_size > 0, done.stderr[-2000:]
    return shot


def _different(live: Path, replayed: Path) -> float:
    """Share of pixels that differ (by more than 16 levels of grey) between the live page and the replay
    below pywb's banner (its height found as the offset, 0 to 120 px, where the two agree best)."""
    from PIL import Image, ImageChops

    with Image.open(live) as left, Image.open(replayed) as right:
        a, b = left.convert("RGB"), right.convert("RGB")
        width, height = a.size
        shares = []
        for banner in range(0, 121, 2):
            top = a.crop((0, 0, width, height - banner))
            below = b.crop((0, banner, width, height))
            histogram = ImageChops.difference(top, below).convert("L").histogram()
            shares.append(sum(histogram[16:]) / max(1, sum(histogram)))
    return min(shares)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int, dict[str, Path], Path]]:
    """The crawl with requisites, one without, and screenshots of the live pages."""
    base = tmp_path_factory.mktemp("fidelity")
    loop = asyncio.new_event_loop()
    site = ArchiveSite()
    loop.run_until_complete(site.__aenter__())
    try:
        loop.run_until_complete(run_crawl(site.config(base / "with"), [site.url("/")]))
        bare = site.config(base / "bare")
        loop.run_until_complete(run_crawl(dataclasses.replace(bare, scope=dataclasses.replace(bare.scope, requisites=False)),
                                          [site.url("/")]))
        shots = {}
        for n, path in enumerate(PAGES):
            task = loop.run_in_executor(None, _shoot, site.url(path), base / f"live{n}.png", base / "chromium")
            shots[path] = loop.run_until_complete(task)
        yield base / "with" / "out", site.port, shots, base / "bare" / "out"
    finally:
        loop.run_until_complete(site.__aexit__(None, None, None))
        loop.close()


def _replayed(source: Path, port: int, tmp: Path, name: str) -> dict[str, Path]:
    assert WAYBACK is not None
    replay = start_replay(source, WAYBACK)
    children: list[int] = []
    try:
        base = replay.read_until("open ", 90.0).split()[1].rstrip("/")
        children = replay.children()
        return {path: _shoot(f"{base}/2mp_/http://{SITE}:{port}{path}", tmp / f"{name}{n}.png", tmp / "chromium")
                for n, path in enumerate(PAGES)}
    finally:
        stop_replay(replay, children)


def test_replayed_pages_look_like_the_live_ones_from_the_crawl_and_from_the_wacz(
        live: tuple[Path, int, dict[str, Path], Path], tmp_path: Path) -> None:
    crawl, port, shots, _bare = live
    wacz = tmp_path / "site.wacz"
    assert main(["export", str(crawl), "--wacz", str(wacz)]) == 0
    for name, source in (("dir", crawl), ("wacz", wacz)):
        replayed = _replayed(source, port, tmp_path, name)
        for path in PAGES:
            share = _different(shots[path], replayed[path])
            assert share < MAX_DIFFERENT, f"{name} {path}: {share:.1%} of pixels differ ({replayed[path]})"


def test_without_requisites_the_replay_is_visibly_not_the_page(live: tuple[Path, int, dict[str, Path], Path],
                                                                tmp_path: Path) -> None:
    _crawl, port, shots, bare = live
    replayed = _replayed(bare, port, tmp_path, "bare")
    assert _different(shots["/"], replayed["/"]) > 0.2
    shutil.rmtree(tmp_path / "chromium", ignore_errors=True)
