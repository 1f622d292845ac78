"""The README's main job: `webgather demo` serves the synthetic web, crawls it, checks the closure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _demo(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webgather", "demo", "--hosts", "4", "--pages-per-host", "15", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )


def test_demo_crawls_exactly_the_closure_and_can_run_again(tmp_path: Path) -> None:
    first = _demo(tmp_path / "demo")
    assert first.returncode == 0, first.stderr
    assert ": exact match" in first.stdout
    assert (tmp_path / "demo" / "crawl" / "summary.json").exists()
    again = _demo(tmp_path / "demo")
    assert again.returncode == 0, again.stderr


def test_demo_refuses_to_overwrite_a_directory_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "mine" / "crawl").mkdir(parents=True)
    done = _demo(tmp_path / "mine")
    assert done.returncode == 2
    assert "not an earlier demo's output" in done.stderr
    assert done.stderr.count("\n") == 1
