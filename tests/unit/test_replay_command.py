"""``webgather replay``'s refusals: one line, exit 2, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgather.cli import main
from webgather.commands import replay
from webgather.commands.replay import find_wayback, replay_venvs


def _crawl_dir(tmp_path: Path) -> Path:
    (tmp_path / "warc").mkdir()
    (tmp_path / "warc" / "index.cdxj").write_text("")
    return tmp_path


def test_without_pywb_one_line_says_how_to_install_it_and_where_it_looked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(replay, "replay_venvs", lambda: [tmp_path / "a" / ".venv-replay", tmp_path / ".venv-replay"])
    assert main(["replay", str(_crawl_dir(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pywb not found" in err and "pipx install pywb" in err
    assert f"looked in {tmp_path}/a/.venv-replay/bin/wayback, {tmp_path}/.venv-replay/bin/wayback and for" in err
    assert main(["replay", str(tmp_path), "--pywb", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no executable pywb `wayback`" in err


def test_pywb_may_be_named_by_its_program_or_its_virtualenv(tmp_path: Path) -> None:
    program = tmp_path / "venv" / "bin" / "wayback"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert find_wayback(str(program)) == str(program)
    assert find_wayback(str(tmp_path / "venv")) == str(program)


def test_the_replay_venv_scripts_setup_makes_is_found_without_pywb(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    program = tmp_path / ".venv-replay" / "bin" / "wayback"  # beside the virtualenv webgather runs in
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (tmp_path / ".venv").mkdir()
    monkeypatch.setattr("sys.prefix", str(tmp_path / ".venv"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert replay_venvs()[0] == tmp_path / ".venv-replay"
    assert find_wayback(None) == str(program)


def test_the_checkout_s_replay_venv_is_among_the_places() -> None:
    import webgather

    checkout = Path(webgather.__file__).resolve().parents[2]
    if not (checkout / "pyproject.toml").is_file():
        pytest.skip("webgather is not imported from a checkout")
    assert checkout / ".venv-replay" in replay_venvs()


def test_a_missing_dir_or_a_bad_port_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["replay", str(tmp_path), "--port", "70000"])
    assert stop.value.code == 2
    assert "a port is 0..65535" in capsys.readouterr().err


def test_a_port_another_server_listens_on_is_refused_before_pywb_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    program = tmp_path / "wayback"  # never run: the port is checked first
    program.write_text("#!/bin/sh\nexit 1\n")
    program.chmod(0o755)
    (tmp_path / "crawl" / "warc").mkdir(parents=True)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["replay", str(tmp_path / "crawl"), "--port", str(port), "--pywb", str(program)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot serve on 127.0.0.1 port {port}" in err


def test_a_program_that_exits_instead_of_serving_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from webgather.store.cdxj import cdxj_line

    program = tmp_path / "wayback"
    program.write_text("#!/bin/sh\nexit 3\n")
    program.chmod(0o755)
    (tmp_path / "crawl" / "warc").mkdir(parents=True)
    line = cdxj_line("http://a.test/", "2026-11-25T17:00:00Z", "text/html", 200, "sha1:A", 1, 0, "f.warc.gz")
    (tmp_path / "crawl" / "warc" / "index.cdxj").write_text(line)
    assert main(["replay", str(tmp_path / "crawl"), "--port", "0", "--pywb", str(program)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pywb exited with status 3 before serving" in err
