"""``recrawl DIR`` and a resume take the crawl's stored settings (``DIR/definition.json``): flags change
what may change and are refused, in one line, where they may not; a cycle whose every fetch failed
exits 5 without a freshness figure it did not measure."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from webgather.testweb.server import TestWebServer

from recrawl_web import changing_web

SHORT_RETRIES = """
[robots]
error_retry_s = 0.2
retry_factor = 1.0
max_tries = 2
[politeness]
min_delay_s = 0.0
backoff_base_s = 0.05
backoff_max_s = 0.2
[fetch]
connect_timeout_s = 2.0
"""


async def _run(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webgather", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _fetches(stdout: str) -> int:
    found = re.search(r"^fetches (\d+):", stdout, re.MULTILINE)
    assert found is not None, stdout
    return int(found.group(1))


async def test_recrawl_dir_keeps_the_crawl_s_settings(tmp_path: Path) -> None:
    out, config = tmp_path / "out", tmp_path / "crawl.toml"
    config.write_text(SHORT_RETRIES)
    async with TestWebServer(changing_web(n_hosts=2, mean_pages_per_host=6)) as server:
        resolve = server.write_resolve_file(tmp_path / "resolve.txt")
        code, stdout, stderr = await _run("crawl", server.home_url(0), "--out", str(out), "--config", str(config),
                                          "--resolve", str(resolve), "--allow-address", "127.0.0.0/8", "--no-progress")
        assert code == 0, stderr
        pages = int(stdout.split()[1])
        assert pages >= 2

        code, stdout, stderr = await _run("recrawl", str(out), "--cycle", "1s")  # nothing repeated
        assert code == 0, stderr
        assert _fetches(stdout) > 0 and "dns" not in stdout and "forbidden_address" not in stdout

        other = tmp_path / "other.txt"
        other.write_text(resolve.read_text())
        code, stdout, stderr = await _run("recrawl", str(out), "--resolve", str(other), "--delay", "0.5")
        assert code == 2 and stdout == ""
        assert stderr.count("\n") == 1 and "fetch.resolve_file (--resolve)" in stderr, stderr
        assert "politeness.min_delay_s (--delay)" in stderr
        code, _, stderr = await _run("crawl", "--out", str(out), "--scope", "any", "--no-progress")  # a resume too
        assert code == 2 and stderr.count("\n") == 1 and "scope.mode (--scope)" in stderr, stderr

    # the web is gone: every fetch of the next cycle fails
    code, stdout, stderr = await _run("recrawl", str(out), "--cycle", "1s")
    assert code == 5, stdout + stderr
    assert "estimated freshness" not in stdout and "freshness not measured" in stdout
    assert stderr.startswith("webgather: nothing fetched in cycle") and stderr.count("\n") == 1, stderr
