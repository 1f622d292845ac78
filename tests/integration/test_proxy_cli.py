"""``webgather crawl --proxy URL`` / ``--proxy-rule``: wired to the config, and bad proxies are one-line errors."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from webgather.store.crawllog import read_crawl_log

from forward_proxy import ForwardProxy
from test_address_guard import TinyServer


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    return subprocess.run([sys.executable, "-m", "webgather", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**clean, **(env or {})})


def _one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr


def test_unusable_proxies_are_one_line_errors_that_keep_the_password(tmp_path: Path) -> None:
    done = _run("crawl", "http://a.example/", "--out", "out", "--no-progress", "--proxy", "socks5://u:pw9@h:1",
                cwd=tmp_path)
    _one_line_error(done, "fetch.proxy", "socks5")
    assert "pw9" not in done.stderr
    done = _run("crawl", "http://a.example/", "--out", "out", "--no-progress", "--proxy-rule", "*.a.example",
                cwd=tmp_path)
    _one_line_error(done, "fetch.proxy_rules")
    done = _run("crawl", "http://a.example/", "--out", "out", "--no-progress", "--ignore-robots",
                cwd=tmp_path, env={"HTTPS_PROXY": "socks5://h:1080"})
    _one_line_error(done, "HTTPS_PROXY", "socks5")


async def test_crawl_command_goes_through_the_proxy_and_its_rules(tmp_path: Path) -> None:
    names = {"via.test": "127.0.0.2", "direct.test": "127.0.0.2"}
    resolve = tmp_path / "resolve.txt"
    resolve.write_text("".join(f"{n} {a}\n" for n, a in names.items()))
    async with TinyServer("127.0.0.2", {"/": (200, "", "")}) as origin, ForwardProxy(names, ("u", "pw")) as proxy:
        port = origin.port
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webgather", "crawl", f"http://via.test:{port}/", f"http://direct.test:{port}/",
            "--out", str(tmp_path / "out"), "--no-progress", "--ignore-robots", "--resolve", str(resolve),
            "--allow-address", "127.0.0.2/32", "--proxy-rule", "direct.test direct", "--pin-cpu", "off",
            env={**{k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
                 "WEBGATHER_FETCH__PROXY": proxy.url(("u", "pw"))},  # credentials outside argv
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    entries = list(read_crawl_log(tmp_path / "out" / "crawl.log.jsonl"))
    assert {(e["url"], e["status"]) for e in entries} == {(f"http://via.test:{port}/", 200),
                                                          (f"http://direct.test:{port}/", 200)}
    assert [r.target for r in proxy.requests] == [f"http://via.test:{port}/"]


@pytest.mark.slow
async def test_workers_take_the_proxy_from_the_crawl_definition(tmp_path: Path) -> None:
    """``crawl --workers 2 --proxy URL``: the workers get no --proxy; the stored definition carries it."""
    names = {"via.test": "127.0.0.2", "other.test": "127.0.0.2"}
    resolve = tmp_path / "resolve.txt"
    resolve.write_text("".join(f"{n} {a}\n" for n, a in names.items()))
    async with TinyServer("127.0.0.2", {}) as origin, ForwardProxy(names, ("u", "pw")) as proxy:
        port = origin.port
        origin.pages.update({"/": (200, "", f'<a href="http://other.test:{port}/x">x</a><a href="/y">y</a>'),
                             "/x": (200, "", "x"), "/y": (200, "", "y")})
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webgather", "crawl", f"http://via.test:{port}/", "--workers", "2",
            "--out", str(tmp_path / "out"), "--no-progress", "--ignore-robots", "--resolve", str(resolve),
            "--allow-address", "127.0.0.2/32", "--scope", "any", "--proxy", proxy.url(("u", "pw")),
            env={k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _out, err = await asyncio.wait_for(process.communicate(), 240)
    assert process.returncode == 0, err.decode()[-2000:]
    entries = [e for log in (tmp_path / "out").rglob("crawl.log.jsonl") for e in read_crawl_log(log)]
    urls = {f"http://via.test:{port}/", f"http://other.test:{port}/x", f"http://via.test:{port}/y"}
    assert {(e["url"], e["status"]) for e in entries} == {(u, 200) for u in urls}
    assert sorted(r.target for r in proxy.requests) == sorted(urls)
    assert origin.connections == 3  # all from the proxy: no worker went direct
