"""A real full disk (a small tmpfs): the crawl stops cleanly, a restart on the full disk
refuses in one line, and a resume after the disk grows ends with the exact closure.

The tmpfs tests need root (mount); skipped with the reason otherwise. Every mount is
undone in a finally.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from webgather.cli import EXIT_WRITE_FAILED
from webgather.config import to_toml
from webgather.errors import WriteFailed
from webgather.runtime.launch.crawl import run_crawl
from webgather.runtime.engine.robots_driver import RobotsDriver
from webgather.store.cdxj import parse_line
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from full_disk import FullDisk
from node_crawl_helpers import crawl_config, fetched_urls, final_entries, verify_warcs, write_resolve

# A whole crawl of the test web takes ~670 KiB: each size fills at a different point.
DISK_SIZES = ("160k", "320k", "480k")


def _mount(directory: Path, size: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                          capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip() or done.returncode}")


@contextmanager
def small_disk(directory: Path, size: str) -> Iterator[Path]:
    _mount(directory, size)
    try:
        yield directory
    finally:
        subprocess.run(["umount", str(directory)], capture_output=True, timeout=30, check=False)


def _grow(directory: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=64m", str(directory)], check=True, timeout=30)


async def _crawl(seed: str, out: Path, config_file: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", "crawl", seed, "--out", str(out),
        "--config", str(config_file), "--no-progress",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(proc.communicate(), timeout=180)
    assert proc.returncode is not None
    return proc.returncode, stderr.decode()


def _assert_one_line_disk_full(code: int, stderr: str, out: Path) -> None:
    assert code == EXIT_WRITE_FAILED, stderr
    lines = stderr.strip().splitlines()  # logged warnings (a robots.txt unavailable) may come before
    errors = [line for line in lines if line.startswith("webgather: error:")]
    assert errors == lines[-1:] and "Traceback" not in stderr, stderr
    assert errors[0].startswith("webgather: error: disk full: "), errors[0]
    assert str(out) in errors[0] and ("(ENOSPC)" in errors[0] or "(SQLITE_FULL)" in errors[0]), errors[0]


def _indexed_urls(out: Path) -> set[str]:
    index = out / "warc" / "index.cdxj"
    return {parse_line(line).url for line in index.read_text().splitlines()}


async def _fill_and_resume(tmp_path: Path, size: str) -> None:
    model = WebModel(WebParams.for_tests())
    with small_disk(tmp_path / "disk", size) as disk:
        out = disk / "out"
        async with TestWebServer(model) as server:
            config = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.01)
            config_file = tmp_path / "crawl.toml"
            config_file.write_text(to_toml(config))
            seed = server.home_url(0)
            code, stderr = await _crawl(seed, out, config_file)
            _assert_one_line_disk_full(code, stderr, out)
            code, stderr = await _crawl(seed, out, config_file)  # the disk is still full
            _assert_one_line_disk_full(code, stderr, out)
            _grow(disk)
            code, stderr = await _crawl(seed, out, config_file)
            assert code == 0, stderr
            expected = crawl_outcomes(model, [seed], config, now_s=server.clock.wall())
        entries = final_entries(out)
        fetched = fetched_urls(entries)
        assert set(fetched) == set(expected.fetched), (
            f"{size}: lost {sorted(set(expected.fetched) - set(fetched))[:8]}, "
            f"extra {sorted(set(fetched) - set(expected.fetched))[:8]}"
        )
        archived = {e["url"] for e in entries if e.get("warc_file")}
        with_response = {e["url"] for e in entries if e.get("status") is not None}
        assert with_response <= archived
        assert with_response <= _indexed_urls(out)
        assert verify_warcs(out) > 0
        assert json.loads((out / "summary.json").read_text())["finished"] is True


@pytest.mark.parametrize("size", DISK_SIZES)
async def test_disk_full_stops_then_resume_loses_nothing(tmp_path: Path, size: str) -> None:
    await _fill_and_resume(tmp_path, size)


async def test_a_log_that_cannot_be_written_stops_the_crawl_and_loses_no_url(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    """In process, no root needed: the crawl log's disk is full from the start, so the very
    first write (the seed host's robots.txt) fails. The crawl must stop with WriteFailed and
    keep the seed queued (it used to give the host up and drop its URLs, their log lines
    lost with the writer), then a resume with room crawls the closure."""
    model = WebModel(WebParams.for_tests())
    out = tmp_path / "out"
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.01)
        seed = server.home_url(0)
        disk = FullDisk(monkeypatch, "crawl.log.jsonl")
        with pytest.raises(WriteFailed, match="disk full: cannot write crawl log"):
            await run_crawl(config, [seed])
        stopped = json.loads((out / "summary.json").read_text())
        assert stopped["finished"] is False and "disk full" in stopped["write_failed"]
        disk.full = False
        summary = await run_crawl(config, [seed])
        expected = crawl_outcomes(model, [seed], config, now_s=server.clock.wall())
    assert summary["finished"] is True and "write_failed" not in summary
    assert set(fetched_urls(final_entries(out))) == set(expected.fetched)


async def test_a_full_disk_right_after_a_host_is_given_up_loses_none_of_its_urls(monkeypatch: pytest.MonkeyPatch,
                                                                                tmp_path: Path) -> None:
    """The disk fills the moment a host's robots.txt is given up. Its queued URLs used to be
    removed from the frontier at once, their robots_unavailable lines left in the writer: lost.
    Now each is completed only once its line is stored, so the resume logs every one."""
    model = WebModel(WebParams.for_tests())
    out = tmp_path / "out"
    disk = FullDisk(monkeypatch, "crawl.log.jsonl")
    disk.full = False
    give_up = RobotsDriver._drop

    def drop_then_fill(driver: RobotsDriver, host: str, dead: Any) -> None:
        give_up(driver, host, dead)
        disk.full = True

    monkeypatch.setattr(RobotsDriver, "_drop", drop_then_fill)
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.01)
        seed = server.home_url(0)
        with pytest.raises(WriteFailed, match="disk full"):
            await run_crawl(config, [seed])
        monkeypatch.setattr(RobotsDriver, "_drop", give_up)
        disk.full = False
        await run_crawl(config, [seed])
        expected = crawl_outcomes(model, [seed], config, now_s=server.clock.wall())
    given_up = {url for url, outcome in expected.outcomes.items() if outcome.error == "robots_unavailable"}
    assert given_up, "the test web has no host whose robots.txt is unavailable"
    logged = {e["url"] for e in final_entries(out)}
    assert given_up <= logged, f"lost {sorted(given_up - logged)[:8]}"
    assert set(fetched_urls(final_entries(out))) == set(expected.fetched)
