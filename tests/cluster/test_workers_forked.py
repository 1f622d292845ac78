"""``crawl --workers 2`` forks its workers from the parent (runtime.launch.forked): they run the node
command with the parent's modules loaded, are named ``wg-<node id>``, and the crawl ends as before."""

from __future__ import annotations

import json
from pathlib import Path

from cluster_crawl_helpers import cluster_config, small_web, write_toml
from cluster_process_helpers import children, finish_sampling, start_webgather

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
        proc = await start_webgather("crawl", srv.home_url(0), "--out", str(out), "--config", str(toml),
                                     "--no-progress", "--workers", "2")
        seen: dict[int, str] = {}
        code, output = await finish_sampling(proc, 120, lambda: seen.update(_names(proc.pid)))
    assert code == 0, output
    assert {"wg-w0", "wg-w1"} <= set(seen.values()), seen
    merged = json.loads((out / "summary.json").read_text())
    assert merged["finished"] and merged["exit_codes"] == {"w0": 0, "w1": 0}
    for node in ("w0", "w1"):  # each wrote its own summary and log, as a node run by itself does
        assert json.loads((out / "nodes" / node / "summary.json").read_text())["node"] == node
        assert f"node {node}:" in (out / "nodes" / node / "node.log").read_text()
