"""The README's main job: `webgather demo` serves the synthetic web, crawls it, checks the closure."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from webgather.commands.demo import command_name


def _demo(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webgather", "demo", "--hosts", "4", "--pages-per-host", "15", "--out", str(out),
         *extra], capture_output=True, text=True, timeout=300, cwd=out.parent,
    )


def test_demo_crawls_exactly_the_closure_and_can_run_again(tmp_path: Path) -> None:
    first = _demo(tmp_path / "demo")
    assert first.returncode == 0, first.stderr
    assert ": exact match" in first.stdout
    assert (tmp_path / "demo" / "crawl" / "summary.json").exists()
    again = _demo(tmp_path / "demo")
    assert again.returncode == 0, again.stderr
    # the last line's command works as printed: this demo ran as `python -m webgather` (outside the
    # interpreter's directory, so by its full path), not on PATH
    last = again.stdout.splitlines()[-1]
    assert last == f"next: {shlex.quote(sys.executable)} -m webgather analyze {tmp_path / 'demo' / 'crawl'}", last
    analyze = subprocess.run([*shlex.split(last.removeprefix("next: ")), "--top", "3"], capture_output=True,
                             text=True, timeout=300, cwd=tmp_path)
    assert analyze.returncode == 0 and "report: " in analyze.stdout, analyze.stderr


def test_demo_refuses_to_overwrite_a_directory_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "mine" / "crawl").mkdir(parents=True)
    done = _demo(tmp_path / "mine")
    assert done.returncode == 2
    assert "not an earlier demo's output" in done.stderr
    assert done.stderr.count("\n") == 1


def test_the_next_command_is_the_one_this_process_was_started_as() -> None:
    venv = Path("/w/x")
    assert command_name("/w/x/src/webgather/__main__.py", "/w/x/.venv/bin/python", venv, None) \
        == ".venv/bin/python -m webgather"
    assert command_name("/w/x/.venv/bin/webgather", "/w/x/.venv/bin/python", venv, None) == ".venv/bin/webgather"
    assert command_name("/w/x/.venv/bin/webgather", "/usr/bin/python3", Path("/tmp"), None) == "/w/x/.venv/bin/webgather"
    assert command_name("/w/x/.venv/bin/webgather", "/usr/bin/python3", Path("/tmp"),
                        "/w/x/.venv/bin/webgather") == "webgather"
    assert command_name("/a b/webgather", "/usr/bin/python3", venv, None) == "'/a b/webgather'"


def test_demo_refuses_nonsense_sizes(tmp_path: Path) -> None:
    done = _demo(tmp_path / "d", "--concurrency", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--concurrency must be >= 1" in done.stderr and not (tmp_path / "d").exists()
