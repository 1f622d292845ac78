"""Diagnostics of real crawls (a seed on a closed loopback port): --log-level, --log-format, --log-file,
the workers' node.log, the plain exit line, and a library user who sees nothing until they configure logging.

The seed's robots.txt cannot be fetched: one WARNING ("robots.txt of ... unavailable"), then one
INFO ("gave up ...") when the host is dropped, after two tries 0.05 s apart.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from webgather.config import to_toml
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, write_resolve
from robots_web import closed_port

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR) webgather\.[\w.]+: ")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
WARNING_TEXT = "unavailable (connect): its URLs wait; 1 more tries, then they are dropped"
INFO_TEXT = "its queued URLs are logged as denied"
LIBRARY_USER = """
import asyncio, sys
if sys.argv[4] == "configured":
    import logging
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
from webgather.config import load
from webgather.runtime.launch.crawl import run_crawl
config = load(None, None, {"out_dir": sys.argv[1], "fetch.resolve_file": sys.argv[3],
                           "fetch.allow_addresses": ("127.0.0.0/8",), "robots.error_retry_s": 0.05,
                           "robots.max_tries": 2})
summary = asyncio.run(run_crawl(config, [sys.argv[2]]))
assert summary["finished"] and summary["errors"] == {"robots_unavailable": 1}, summary
"""


@pytest.fixture
def closed_seed(tmp_path: Path) -> tuple[str, list[str]]:
    """A seed nobody answers on 127.0.0.1, and the crawl options that reach it quickly."""
    (tmp_path / "resolve.txt").write_text("closed.test 127.0.0.1\n")
    (tmp_path / "crawl.toml").write_text("[robots]\nerror_retry_s = 0.05\nmax_tries = 2\n")
    return f"http://closed.test:{closed_port()}/", ["--resolve", str(tmp_path / "resolve.txt"), "--config",
                                                    str(tmp_path / "crawl.toml"), "--allow-address", "127.0.0.0/8",
                                                    "--no-progress"]


def _webgather(*args: str, cwd: Path, timeout_s: float = 90.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "webgather", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s, stdin=subprocess.DEVNULL)


NOTHING_FETCHED = "webgather: nothing fetched: no request got an answer (robots_unavailable 1)"
"""The exit line of a crawl of a closed port (exit 5): plain on stderr in every format, and in the log file."""


def _crawl(tmp_path: Path, closed_seed: tuple[str, list[str]], *args: str) -> subprocess.CompletedProcess[str]:
    """The crawl of the closed seed, its stderr without its exit line."""
    seed, options = closed_seed
    done = _webgather("crawl", seed, "--out", str(tmp_path / "out"), *options, *args, cwd=tmp_path)
    assert done.returncode == 5 and "finished: True" in done.stdout, (done.stdout, done.stderr)
    assert done.stderr.endswith(NOTHING_FETCHED + "\n"), done.stderr
    done.stderr = done.stderr.removesuffix(NOTHING_FETCHED + "\n")
    return done


def test_default_diagnostics_are_timestamped_text_lines_on_stderr(
        tmp_path: Path, closed_seed: tuple[str, list[str]]) -> None:
    done = _crawl(tmp_path, closed_seed)
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and all(TEXT_LINE.match(line) for line in lines), done.stderr
    assert " WARNING webgather.runtime.engine.robots_driver: robots.txt of closed.test:" in lines[0] and WARNING_TEXT in lines[0]
    assert " INFO webgather.runtime.engine.robots_driver: gave up closed.test:" in lines[1] and INFO_TEXT in lines[1]
    assert not any(TEXT_LINE.match(line) for line in done.stdout.splitlines()), done.stdout  # stdout: the result


def test_json_format_is_one_object_per_line_with_the_node(tmp_path: Path, closed_seed: tuple[str, list[str]]) -> None:
    done = _crawl(tmp_path, closed_seed, "--log-format", "json")
    records = [json.loads(line) for line in done.stderr.splitlines()]
    assert [r["level"] for r in records] == ["warning", "info"], done.stderr
    for record in records:
        assert ISO_UTC.match(record["time"]) and record["logger"] == "webgather.runtime.engine.robots_driver"
        assert record["node"] == "n0"
    assert WARNING_TEXT in records[0]["message"] and INFO_TEXT in records[1]["message"]


def test_level_warning_hides_info_and_log_file_takes_everything(
        tmp_path: Path, closed_seed: tuple[str, list[str]]) -> None:
    log = tmp_path / "diagnostics.log"
    done = _crawl(tmp_path, closed_seed, "--log-level", "warning", "--log-file", str(log))
    assert done.stderr == ""
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and TEXT_LINE.match(lines[0]) and WARNING_TEXT in lines[0], lines
    assert " ERROR webgather.commands.report: " + NOTHING_FETCHED in lines[1], lines


def test_the_exit_line_stays_plain_on_stderr_and_is_logged_to_the_file(tmp_path: Path) -> None:
    log = tmp_path / "diagnostics.log"
    done = _webgather("crawl", "notaurl", "--out", str(tmp_path / "out"), "--log-format", "json",
                      "--log-file", str(log), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("webgather: error: ") and "notaurl" in done.stderr
    [record] = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["level"] == "error" and record["logger"] == "webgather.cli"
    assert record["message"] == done.stderr.rstrip("\n")
    unwritable = _webgather("crawl", "http://a.test/", "--log-file", str(tmp_path / "no" / "such.log"), cwd=tmp_path)
    assert unwritable.returncode == 2 and unwritable.stderr.startswith("webgather: error: cannot open the log file")
    assert unwritable.stderr.count("\n") == 1, unwritable.stderr


async def test_the_ctrl_c_line_stays_plain_on_stderr_and_is_logged_to_the_file(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests())
    out, log = tmp_path / "out", tmp_path / "diagnostics.jsonl"
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=0.05)
        (tmp_path / "crawl.toml").write_text(to_toml(replace(config, fetch=replace(config.fetch, concurrency=4))))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webgather", "crawl", server.home_url(0), "--out", str(out), "--config",
            str(tmp_path / "crawl.toml"), "--no-progress", "--log-format", "json", "--log-file", str(log),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            async with asyncio.timeout(60):
                while not (out / "crawl.log.jsonl").exists() or (out / "crawl.log.jsonl").read_bytes().count(b"\n") < 20:
                    assert proc.returncode is None, "the crawl ended before it could be interrupted"
                    await asyncio.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _, stderr = await asyncio.wait_for(proc.communicate(), 60)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    line = "webgather: interrupted; run the same command to resume the crawl"
    assert proc.returncode == 130 and stderr.decode() == line + "\n", stderr.decode()
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["level"] == "warning" and last["message"] == line


def test_workers_write_their_diagnostics_to_node_log_with_the_level_and_format_given(
        tmp_path: Path, closed_seed: tuple[str, list[str]]) -> None:
    done = _crawl(tmp_path, closed_seed, "--workers", "1", "--log-level", "warning", "--log-format", "json")
    log = (tmp_path / "out" / "nodes" / "w0" / "node.log").read_text()
    lines = [line for line in log.splitlines() if line != NOTHING_FETCHED]  # the worker's own exit line
    assert lines[-1].startswith("node w0: 0 pages in "), log  # the worker's result, printed on its stdout
    records = [json.loads(line) for line in lines[:-1]]
    assert records and all(r["node"] == "w0" and r["level"] in ("warning", "error") for r in records), log
    assert any(WARNING_TEXT in r["message"] for r in records) and INFO_TEXT not in log
    assert WARNING_TEXT not in done.stderr


@pytest.mark.parametrize("logging_set_up", [False, True])
def test_a_library_user_sees_nothing_until_they_configure_logging(
        tmp_path: Path, closed_seed: tuple[str, list[str]], logging_set_up: bool) -> None:
    seed, _ = closed_seed
    done = subprocess.run([sys.executable, "-c", LIBRARY_USER, str(tmp_path / "out"), seed,
                           str(tmp_path / "resolve.txt"), "configured" if logging_set_up else "bare"],
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    if logging_set_up:  # the same crawl has something to say: the test above is not vacuous
        assert done.stderr.startswith("WARNING webgather.runtime.engine.robots_driver: robots.txt of closed.test:")
    else:
        assert done.stderr == ""
