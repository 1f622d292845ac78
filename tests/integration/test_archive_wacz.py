"""``webgather export DIR --wacz FILE``: the crawl of a site built like a real one, packed as a WACZ that
webrecorder's own validator (``wacz validate``) accepts, with its pages and their titles listed."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from webgather.cli import main
from webgather.runtime.launch.crawl import run_crawl

from archive_site import PAGES, REQUISITES, ArchiveSite
from replay_helpers import fetch, find_wayback, pid_alive, start_replay, stop_replay

WACZ = shutil.which("wacz", path=str(Path(sys.executable).parent)) or shutil.which("wacz")


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    base = tmp_path_factory.mktemp("wacz")

    async def crawl() -> int:
        async with ArchiveSite() as site:
            summary = await run_crawl(site.config(base), [site.url("/")])
            assert summary["finished"] is True
            return site.port

    return base / "out", asyncio.run(crawl())


def test_export_writes_a_wacz_with_every_capture_and_the_pages_with_titles(crawled: tuple[Path, int], tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out, port = crawled
    target = tmp_path / "site.wacz"
    assert main(["export", str(out), "--wacz", str(target)]) == 0
    assert "wrote" in capsys.readouterr().out
    with zipfile.ZipFile(target) as package:
        names = set(package.namelist())
        assert {"datapackage.json", "datapackage-digest.json", "pages/pages.jsonl", "indexes/index.cdx",
                "archive/webgather-n0-00000.warc.gz"} <= names
        assert package.getinfo("archive/webgather-n0-00000.warc.gz").compress_type == zipfile.ZIP_STORED
        pages = [json.loads(line) for line in package.read("pages/pages.jsonl").decode().splitlines()]
        index = package.read("indexes/index.cdx").decode().splitlines()
    assert pages[0]["format"] == "json-pages-1.0"
    titles = {p["url"]: p.get("title") for p in pages[1:]}
    assert set(titles) == {f"http://site.test:{port}{path}" for path in PAGES}
    assert titles[f"http://site.test:{port}/gated/one.html"] == "Gated 1"
    assert all(p["ts"].endswith("Z") for p in pages[1:])
    assert index == sorted(index) and len(index) >= len(PAGES) + len(REQUISITES)
    assert all('"filename":"webgather-n0-00000.warc.gz"' in line for line in index)


@pytest.mark.skipif(WACZ is None, reason="webrecorder's wacz package is not installed (pip install wacz)")
def test_webrecorders_validator_accepts_it(crawled: tuple[Path, int], tmp_path: Path) -> None:
    assert WACZ is not None
    target = tmp_path / "site.wacz"
    assert main(["export", str(crawled[0]), "--wacz", str(target)]) == 0
    done = subprocess.run([WACZ, "validate", "-f", str(target)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation succeeded" in done.stdout


def test_export_of_a_directory_that_is_not_a_crawl_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(tmp_path), "--wacz", str(tmp_path / "x.wacz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no WARC index" in err
    assert not (tmp_path / "x.wacz").exists()


WAYBACK = find_wayback()


@pytest.mark.slow
@pytest.mark.skipif(WAYBACK is None, reason="pywb not installed: ./scripts/setup makes .venv-replay")
def test_replay_serves_the_wacz_through_pywb_gated_pages_and_requisites_too(crawled: tuple[Path, int],
                                                                            tmp_path: Path) -> None:
    assert WAYBACK is not None
    out, port = crawled
    target = tmp_path / "site.wacz"
    assert main(["export", str(out), "--wacz", str(target)]) == 0
    replay = start_replay(target, WAYBACK)
    children: list[int] = []
    try:
        base = replay.read_until("open ", 90.0).split()[1].rstrip("/")
        children = replay.children()
        for path, needle in (("/gated/one.html", b"Gated 1"), ("/css/main.css", b"@font-face"),
                             ("/img/logo-2x.png", b"PNG"), ("/new.html", b"new")):
            status, body, _complete = fetch(f"{base}/2id_/http://site.test:{port}{path}")
            assert status == 200 and needle in body, (path, status, body[:200])
        status, body, _ = fetch(f"{base}/2id_/http://cdn.test:{port}/lib.js")
        assert status == 200 and b"cdn" in body
    finally:
        stop_replay(replay, children)
    assert not any(pid_alive(pid) for pid in children), "pywb outlived the replay command"


def test_replay_of_a_file_that_is_not_a_wacz_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "x.wacz"
    bogus.write_bytes(b"not a zip")
    assert main(["replay", str(bogus), "--pywb", WAYBACK or sys.executable]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("not a WACZ" if WAYBACK else "pywb") in err
