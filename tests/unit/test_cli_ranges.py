"""Out-of-range values are refused with one line and exit status 2, before anything runs.

The seed is a loopback address the crawl would refuse anyway (no --allow-address): a check that
does not fire ends in that other one-line error, never in a request.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from webgather.cli import main
from webgather.config import load
from webgather.errors import ConfigError
from webgather.runtime.engine.affinity import worker_pins

ALLOWED = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("webgather: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize(("flags", "needle"), [
    (["--workers", "0"], "--workers must be at least 1, not 0"),
    (["--workers", "-2"], "--workers must be at least 1"),
    (["--continuous", "--max-cycles", "0"], "--max-cycles must be at least 1"),
    (["--delay", "-1"], "politeness.min_delay_s must be >= 0"),
    (["--max-pages-per-host", "0"], "scope.max_pages_per_host must be >= 1"),
    (["--max-url-length", "0"], "scope.max_url_length"),
    (["--continuous", "--new-share", "1.5"], "recrawl.new_url_share must be in 0..1"),
    (["--continuous", "--budget", "0"], "recrawl.budget_per_cycle must be >= 1"),
])
def test_crawl_refuses_out_of_range_values(flags: list[str], needle: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    _refused(["crawl", "http://127.0.0.1:9/", "--out", str(out), "--no-progress", *flags], capsys, needle)
    assert not out.exists()


@pytest.mark.skipif(ALLOWED is None, reason="no CPU affinity on this OS")
def test_a_cpu_index_past_the_allowed_cpus_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ALLOWED is not None
    _refused(["crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "o"), "--pin-cpu", str(ALLOWED)], capsys,
             f"pin_cpu {ALLOWED}: this process may run on {ALLOWED} CPU(s), so give 0..{ALLOWED - 1}")
    assert load(None, {}, {"pin_cpu": str(ALLOWED - 1)}).pin_cpu == str(ALLOWED - 1)
    with pytest.raises(ConfigError, match="pin_cpu"):
        load(None, {"WEBGATHER_PIN_CPU": str(ALLOWED + 5)}, {})


def test_workers_are_pinned_round_robin_within_the_allowed_cpus() -> None:
    assert worker_pins(5, "auto", frozenset({0, 1})) == ["0", "1", "0", "1", "0"]
    assert worker_pins(2, "3", frozenset({4, 5, 6})) == ["0", "1"]
    assert worker_pins(3, "off", frozenset({0, 1})) == ["off"] * 3
    assert worker_pins(2, "auto", None) == ["0", "0"]


def test_recrawl_of_a_missing_directory_speaks_of_the_directory(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing"
    _refused(["recrawl", str(missing)], capsys, f"recrawl: {missing} does not exist")
    (tmp_path / "empty").mkdir()
    _refused(["recrawl", str(tmp_path / "empty")], capsys, "holds no crawl")
    assert not missing.exists() and list((tmp_path / "empty").iterdir()) == []
    _refused(["recrawl", str(tmp_path / "empty"), "--workers", "0"], capsys, "--workers must be at least 1")


@pytest.mark.parametrize(("argv", "needle"), [
    (["crawl", "--delay", "soon"], "webgather crawl: error: argument --delay: invalid float value: 'soon'"),
    (["crawl", "--continuous", "--cycle", "-3"], "argument --cycle: not a duration: '-3'"),
    (["cluster", "status"], "webgather cluster status: error: the following arguments are required: --crawl"),
])
def test_usage_errors_are_one_line_too(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and needle in err and err.rstrip().endswith("--help)"), err


def test_a_negative_testweb_cache_is_refused(tmp_path: Path) -> None:
    # a subprocess with a deadline: without the check the server would start and serve until killed
    done = subprocess.run([sys.executable, "-m", "webgather", "testweb", "serve", "--hosts", "2", "--cache-mib", "-1",
                           "--out", str(tmp_path / "tw")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == "webgather: error: --cache-mib must be >= 0, not -1\n"
    assert not (tmp_path / "tw").exists()
