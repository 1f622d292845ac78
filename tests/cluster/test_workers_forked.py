"""``crawl --workers 2`` forks its workers from the parent (runtime.launch.forked): they run the node
command with the parent's modules loaded, are named ``wg-<node id>``, and the crawl ends as before."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import children, kill_tree

from webgather.testweb import TestWebServer, WebModel


def _names(pid: int) -> dict[int, str]:
    found = {}
    for each in children(pid):
        try:
            found[each] = Path(f"/proc/{each}/comm").read_text().strip()
        except OSError:
            continue
    return found


async def test_workers_are_forked_named_by_node_and_finish_the_crawl(tmp_path: Path) -> None:
    params = small_web()
    out = tmp_path / "crawl"
    async with TestWebServer(WebModel(params)) as srv:
        toml = write_toml(cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt")),
                          tmp_path / "crawl.toml")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "webgather", "crawl", srv.home_url(0), "--out", str(out), "--config", str(toml),
            "--no-progress", "--workers", "2", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        seen: dict[int, str] = {}
        try:
            async with asyncio.timeout(120):
                waiter = asyncio.ensure_future(proc.communicate())
                while not waiter.done():
                    seen.update(_names(proc.pid))
                    await asyncio.sleep(0.05)
                output = (await waiter)[0].decode(errors="replace")
        finally:
            if proc.returncode is None:
                kill_tree(proc.pid)
                await proc.wait()
    assert proc.returncode == 0, output
    assert {"wg-w0", "wg-w1"} <= set(seen.values()), seen
    merged = json.loads((out / "summary.json").read_text())
    assert merged["finished"] and merged["exit_codes"] == {"w0": 0, "w1": 0}
    for node in ("w0", "w1"):  # each wrote its own summary and log, as a node run by itself does
        assert json.loads((out / "nodes" / node / "summary.json").read_text())["node"] == node
        assert f"node {node}:" in (out / "nodes" / node / "node.log").read_text()
