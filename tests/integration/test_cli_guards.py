"""User errors that used to pass for success or end in a traceback: seeds, node ids, --out, Redis URLs.

Each is a one-line error with exit code 2 (the CLI's user-error code), before any crawl,
connection, DNS lookup or directory happens.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from webgather.runtime.launch.workers import node_command, worker_env
from webgather.seeds import parse_seed
from webgather.errors import SeedError


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "webgather", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, **(env or {})})


def _one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("webgather: error: "), done.stderr
    for needle in needles:
        assert needle in done.stderr


@pytest.mark.parametrize(("seed", "needle"), [("http//not a url", "mistyped scheme"), ("example", "dotted"),
                                              ("localhost:8080", "dotted")])
def test_typo_seeds_are_errors_before_anything_runs(seed: str, needle: str, tmp_path: Path) -> None:
    done = _run("crawl", seed, "--out", "out", "--no-progress", cwd=tmp_path)
    _one_line_error(done, needle)
    assert not (tmp_path / "out").exists()


def test_bare_hosts_need_the_flag() -> None:
    with pytest.raises(SeedError):
        parse_seed("intranet")
    assert parse_seed("intranet", allow_bare_hosts=True) == "http://intranet/"
    assert parse_seed("localhost:8080", allow_bare_hosts=True) == "http://localhost:8080/"
    with pytest.raises(SeedError, match="mistyped scheme"):
        parse_seed("http//x.example.com", allow_bare_hosts=True)
    assert parse_seed("example.com") == "http://example.com/" and parse_seed("0x7f000001") == "http://127.0.0.1/"
    assert parse_seed("[::1]:8080/a") == "http://[::1]:8080/a"


@pytest.mark.parametrize("node_id", ["..", ".", "../x", "a/b", "x" * 65, "sp ace"])
def test_bad_node_ids_are_refused_before_any_directory(node_id: str, tmp_path: Path) -> None:
    done = _run("crawl", "http://127.0.0.1:9/", "--out", "out", "--redis", "redis://127.0.0.1:1", "--crawl", "c",
                "--node-id", node_id, cwd=tmp_path)
    _one_line_error(done, "node id")
    done = _run("node", "--redis", "redis://127.0.0.1:1", "--crawl", "c", "--out", "out2", "--node-id", node_id,
                cwd=tmp_path)
    _one_line_error(done, "node id")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["crawl", "node", "recrawl"])
@pytest.mark.parametrize("out", ["afile", "afile/sub", "/proc"])
def test_unusable_out_is_a_one_line_error(command: str, out: str, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a directory")
    args = {"crawl": ["crawl", "http://127.0.0.1:9/", "--allow-address", "127.0.0.1", "--out", out, "--no-progress"],
            "node": ["node", "--redis", "redis://127.0.0.1:1", "--crawl", "c", "--out", out],
            "recrawl": ["recrawl", out]}[command]
    missing = command == "recrawl" and out == "afile/sub"  # recrawl names a crawl that is not there
    _one_line_error(_run(*args, cwd=tmp_path), out, "does not exist" if missing else "output directory")
    assert (tmp_path / "afile").read_text() == "not a directory"


def test_workers_get_the_redis_url_outside_their_argv() -> None:
    secret = "redis://:s3cret@127.0.0.1:6390/0"
    argv = node_command("c", Path("out"), "w0", ["--concurrency", "4"])
    assert not any("s3cret" in arg or arg.startswith("redis") for arg in argv)
    assert "--redis" not in argv
    assert worker_env(secret)["WEBGATHER_REDIS_URL"] == secret


def test_redis_url_from_file_env_and_at_path(tmp_path: Path) -> None:
    url_file = tmp_path / "redis.url"
    url_file.write_text("# the crawl's Redis\nredis://:s3cret@127.0.0.1:1/0\n")
    for args, env in ((["--redis-file", str(url_file)], {}), (["--redis", f"@{url_file}"], {}),
                      ([], {"WEBGATHER_REDIS_URL": "redis://:s3cret@127.0.0.1:1/0"})):
        done = _run("cluster", "status", "--crawl", "c", *args, cwd=tmp_path, env=env)
        _one_line_error(done, "127.0.0.1:1")  # it tried that Redis (nothing listens on port 1)
        assert "s3cret" not in done.stderr
    _one_line_error(_run("cluster", "status", "--crawl", "c", cwd=tmp_path), "WEBGATHER_REDIS_URL")
    _one_line_error(_run("node", "--crawl", "c", "--redis-file", str(tmp_path / "none"), cwd=tmp_path),
                    "cannot read the Redis URL file")
    both = _run("node", "--crawl", "c", "--redis", "redis://x", "--redis-file", str(url_file), cwd=tmp_path)
    _one_line_error(both, "once")
    # the variable is not a config setting: a plain crawl with it set is not an "unknown setting" error
    done = _run("crawl", "http//bad", "--out", "o", cwd=tmp_path, env={"WEBGATHER_REDIS_URL": "redis://x"})
    _one_line_error(done, "mistyped scheme")


def test_a_seed_at_a_refused_address_is_an_error_not_an_empty_crawl(tmp_path: Path) -> None:
    resolve = tmp_path / "resolve.txt"
    resolve.write_text("intranet.example.com 127.0.0.1\n")  # loopback: a broken check could reach nothing else
    for seed in ("http://127.0.0.1:9/", "http://0x7f000001:9/", "http://[::1]:9/", "http://intranet.example.com/"):
        done = _run("crawl", seed, "--resolve", str(resolve), "--out", "out", "--no-progress", cwd=tmp_path)
        _one_line_error(done, "private address", "--allow-address")
    assert not (tmp_path / "out").exists()
