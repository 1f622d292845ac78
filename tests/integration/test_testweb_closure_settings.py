"""The settings under which the synthetic web's closure holds: stated by ``testweb stats``, written by
``testweb serve`` as a ``--config`` file that gives the crawl exactly those settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from webgather.cli import main
from webgather.config import load
from webgather.testweb.params import CLOSURE_SECTIONS, WebParams, closure_toml, crawl_config_for


def test_stats_says_under_which_settings_its_closure_holds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["testweb", "stats", "--hosts", "3", "--pages-per-host", "5", "--json"]) == 0
    settings = json.loads(capsys.readouterr().out)["closure_settings"]
    for part in ("scope domains web.test", "127.0.0.0/8 allowed", "timeout 4.47 s", "Crawl-delay capped at 1 s",
                 "crawl.toml testweb serve writes"):
        assert part in settings, settings


@pytest.mark.parametrize("params", [WebParams(n_hosts=3), WebParams.for_tests(n_hosts=3)])
def test_the_written_settings_load_back_to_the_closure_s_own(tmp_path: Path, params: WebParams) -> None:
    path = tmp_path / "crawl.toml"
    path.write_text(closure_toml(params))
    loaded, expected = load(path, {}, {}), crawl_config_for(params)
    for section in CLOSURE_SECTIONS:
        assert getattr(loaded, section) == getattr(expected, section), section
    assert loaded.seeds == () and loaded.out_dir == load(None, {}, {}).out_dir  # only those sections are set


def test_serve_writes_the_settings_and_prints_the_command_that_crawls_it_all(tmp_path: Path) -> None:
    out = tmp_path / "tw"
    server = subprocess.Popen([sys.executable, "-m", "webgather", "testweb", "serve", "--hosts", "2", "--out", str(out)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = next(line for line in server.stdout if line.startswith("crawl settings of the closure"))
    finally:
        server.terminate()  # by its PID
        server.wait(timeout=30)
        assert server.stdout is not None
        server.stdout.close()
    assert f"webgather crawl @{out}/seeds.txt --resolve {out}/resolve.txt --config {out}/crawl.toml" in line
    assert (out / "crawl.toml").read_text() == closure_toml(WebParams(n_hosts=2))  # the port is in no setting
