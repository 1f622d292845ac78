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


def test_the_demo_web_s_limits_scale_with_the_machine_s_load(tmp_path: Path) -> None:
    from webgather.testweb import WebModel, closure
    from webgather.testweb.params import WebParams, crawl_config_for, load_time_scale, time_scaled

    # at load 4-8 on 2 cores the 0.22 s timeout cut ordinary pages: x2..x4 there, x1 on a quiet machine
    assert [load_time_scale(load, 2) for load in (0.3, 1.5, 2.0, 4.0, 4.5, 8.0)] == [1.0, 1.0, 1.0, 2.0, 2.5, 4.0]
    params = WebParams.for_tests(seed=7, n_hosts=6, mean_pages_per_host=10.0)
    quiet, busy = crawl_config_for(params), crawl_config_for(time_scaled(params, 4.0))
    assert busy.fetch.total_timeout_s == 4 * quiet.fetch.total_timeout_s
    # every page keeps its side of the timeout: the closure is the same web's, slow pages in, very slow out
    model, scaled = WebModel(params), WebModel(time_scaled(params, 4.0))
    seeds = [model.home_url(0)]
    assert closure(scaled, seeds, busy) == closure(model, seeds, quiet)
    done = _demo(tmp_path / "demo", "--time-scale", "3")
    assert done.returncode == 0, done.stderr
    assert "time scale 3)" in done.stdout and f"timeout {3 * quiet.fetch.total_timeout_s:.2f} s" in done.stdout
    assert ": exact match" in done.stdout
    refused = _demo(tmp_path / "demo", "--time-scale", "0.5")
    assert refused.returncode == 2 and "--time-scale must be a number >= 1" in refused.stderr


def test_the_closure_check_names_the_pages_cut_by_the_timeout_and_those_only_they_link_to() -> None:
    from webgather.commands.demo import explain_timeouts
    from webgather.testweb.closure import ClosureResult, Expected

    def page(url: str, *links: str, error: str | None = None) -> Expected:
        return Expected(url, "page", 0, 0, None if error else 200, error, 1, links=links)

    outcomes = {u.url: u for u in (page("http://a/", "http://a/1", "http://a/2"), page("http://a/1", "http://a/3"),
                                   page("http://a/2"), page("http://a/3"), page("http://a/slow", error="timeout"))}
    expected = ClosureResult(frozenset(outcomes), outcomes, {})
    final = {"http://a/": {"status": 200}, "http://a/1": {"error": "timeout"}, "http://a/2": {"status": 200},
             "http://a/slow": {"error": "timeout"}}  # a/1 was cut (a/slow is meant to time out): a/3 never found
    lines = explain_timeouts(expected, final, {"http://a/3"}, 0.22)
    assert lines == ["timed out: 1 pages the web answers within the 0.22 s timeout (the machine was too busy; "
                     "--time-scale F gives them F times the room): http://a/1",
                     "not reached: 1 of the 1 missing pages are linked from those: http://a/3"]
    assert explain_timeouts(expected, {"http://a/slow": {"error": "timeout"}}, set(), 0.22) == []
