"""Cluster crawls with real node processes over Redis (``webgather crawl --workers N``).

The synthetic web is served by this test's event loop; the crawl runs as a
child process tree (parent + workers + embedded Redis), which the tests end
by PID if anything goes wrong.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, small_web, write_toml
from cluster_process_helpers import children, kill_tree

from webgather.testweb import TestWebServer, WebModel, closure, max_in_flight

M = 64


def _worker_pid(parent: int, node: str) -> int | None:
    for pid in children(parent):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if Path(f"/proc/{pid}/comm").read_text().strip() == f"wg-{node}":  # forked from the parent
                return pid
        except OSError:
            continue
        if b"node" in argv and b"--node-id" in argv and argv[argv.index(b"--node-id") + 1] == node.encode():
            return pid
    return None


def _final_fetches(node_dir: Path) -> int:
    log = node_dir / "crawl.log.jsonl"
    if not log.exists():
        return 0
    lines = log.read_text().splitlines()[:-1]  # the last line may be partial
    return sum(1 for e in map(json.loads, lines) if e.get("kind") == "page" and not e.get("retry")
               and e.get("error") not in ("robots", "robots_unavailable", "off_scope"))


async def _crawl(tmp_path: Path, args: list[str], *, timeout_s: float = 60.0,
                 kill_after_pages: int | None = None) -> tuple[int, list[int]]:
    """Run ``webgather crawl ... args``; optionally kill -9 worker w1 once it has fetched that many pages."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", "crawl", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    killed: list[int] = []
    try:
        async with asyncio.timeout(timeout_s):
            if kill_after_pages is not None:
                log = tmp_path / "crawl" / "nodes" / "w1" / "crawl.log.jsonl"
                while not (log.exists() and log.read_text().count('"kind":"page"') >= kill_after_pages):
                    await asyncio.sleep(0.05)
                pid = _worker_pid(proc.pid, "w1")
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            output, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            kill_tree(proc.pid)
            await proc.wait()
    print(output.decode(errors="replace"))
    assert proc.returncode is not None
    return proc.returncode, killed


async def _serve_and_crawl(tmp_path: Path, params: Any, extra: list[str], **kw: Any) -> dict[str, Any]:
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        resolve = srv.write_resolve_file(tmp_path / "resolve.txt")
        config = cluster_config(params, out, resolve, n_buckets=M, **kw.pop("config", {}))
        seeds = [srv.home_url(0), srv.home_url(3)]
        toml = write_toml(config, tmp_path / "crawl.toml")
        code, killed = await _crawl(tmp_path, [*seeds, "--out", str(out), "--config", str(toml), "--no-progress",
                                               *extra], **kw)
        records = list(srv.records)
    return {"code": code, "killed": killed, "out": out, "records": records, "expect": closure(model, seeds, config),
            "summary": json.loads((out / "summary.json").read_text())}


async def test_two_worker_processes_fetch_the_closure_politely(tmp_path: Path) -> None:
    run = await _serve_and_crawl(tmp_path, small_web(), ["--workers", "2"])
    assert run["code"] == 0
    entries = fetch_entries(run["out"])
    assert {e["url"] for e in entries} == run["expect"]
    assert duplicates(entries) == {}
    assert {e["node"] for e in entries} == {"w0", "w1"}
    # one connection per host across the whole cluster, per the server's own records
    assert max(max_in_flight(run["records"], lambda r: r.host).values()) == 1
    summary = run["summary"]
    assert summary["finished"] is True and summary["pages"] == len(entries)
    assert set(summary["nodes"]) == {"w0", "w1"} and summary["cross"]["messages"] > 0
    assert summary["load"]["intervals"] and "var_share" in summary["load"]["intervals"][0]
    assert not (run["out"] / "redis" / "redis.sock").exists()  # the embedded Redis was stopped
    assert 0 < summary["redis_cpu_s"] < 60  # where the cores went: each node's cpu_s, and Redis's


async def test_a_worker_killed_mid_crawl_costs_only_its_counted_in_flight_pages(tmp_path: Path) -> None:
    params = small_web(n_hosts=24)
    run = await _serve_and_crawl(tmp_path, params, ["--workers", "2"], kill_after_pages=15,
                                 config={"min_delay_s": 0.05}, timeout_s=90.0)
    assert run["code"] == 0 and run["killed"]
    entries = fetch_entries(run["out"])
    assert {e["url"] for e in entries} == run["expect"]
    counters = run["summary"]["counters"]
    assert counters["recovered_buckets"] == M // 2
    dups = duplicates(entries)
    assert sum(n - 1 for n in dups.values()) <= counters["recovered_in_flight"], dups
    assert run["summary"]["exit_codes"]["w1"] == -signal.SIGKILL


async def test_partition_by_ip_keeps_the_per_ip_cap_cluster_wide(tmp_path: Path) -> None:
    params = small_web(hosts_per_ip=3)
    run = await _serve_and_crawl(tmp_path, params, ["--workers", "2", "--partition-by", "ip", "--per-ip", "1"])
    assert run["code"] == 0
    entries = fetch_entries(run["out"])
    assert {e["url"] for e in entries} == run["expect"] and duplicates(entries) == {}
    assert max(max_in_flight(run["records"], lambda r: r.local).values()) == 1
    nodes_of_ip: dict[str, set[str]] = {}
    addresses = dict(line.split()[:2] for line in (tmp_path / "resolve.txt").read_text().split("\n")
                     if line.strip() and not line.startswith("#"))
    assert len(set(addresses.values())) < len(addresses)  # hosts share addresses
    for entry in entries:
        host = entry["host"].split(":")[0]
        nodes_of_ip.setdefault(addresses.get(host, host), set()).add(entry["node"])
    assert all(len(nodes) == 1 for nodes in nodes_of_ip.values()), nodes_of_ip
    assert len({n for nodes in nodes_of_ip.values() for n in nodes}) == 2


async def _node_command(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def _node_command_env(env: dict[str, str], *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "webgather", *args, env={**os.environ, **env},
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_an_unreachable_redis_is_one_clear_line(tmp_path: Path) -> None:
    """An outage is not a bad command line: the node retries for max_outage_s, then stops with exit 6."""
    code, err = await _node_command_env({"WEBGATHER_CLUSTER__MAX_OUTAGE_S": "1.5"}, "node", "--redis",
                                        "redis://127.0.0.1:1", "--crawl", "c", "--out", str(tmp_path))
    lines = err.splitlines()
    assert code == 6, err
    assert len([line for line in lines if "pausing and retrying for up to 1.5 s" in line]) == 1
    assert lines[-1].startswith("webgather: error:") and "unavailable for more than 1.5 s" in lines[-1]
    assert "cannot reach Redis at redis://127.0.0.1:1" in lines[-1]
    code, err = await _node_command("node", "--redis", "nonsense://x", "--crawl", "c", "--out", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and err.startswith("webgather: error:")


async def test_a_node_with_another_m_is_refused_in_one_line(tmp_path: Path) -> None:
    from webgather.cluster.embedded import EmbeddedRedis
    from webgather.cluster.redis import RedisBackend
    from webgather.runtime.launch.cluster import start_crawl

    params = small_web()
    with EmbeddedRedis(tmp_path / "redis") as server:
        backend = await RedisBackend.connect(server.url, "c1", M)
        try:
            config = cluster_config(params, tmp_path / "crawl", tmp_path / "none.txt", n_buckets=M)
            await start_crawl(backend, config, ["http://h0001.web.test/"], nodes=["w0"])
        finally:
            await backend.aclose()
        code, err = await _node_command("node", "--redis", server.url, "--crawl", "c1", "--out",
                                        str(tmp_path / "crawl"), "--buckets", "32")
        assert code == 2 and err.count("\n") == 1
        assert "--buckets 32" in err and f"{M} buckets" in err
        code, err = await _node_command("node", "--redis", server.url, "--crawl", "nope", "--out", str(tmp_path))
        assert code == 6 and err.count("\n") == 1 and "no crawl of that name" in err
        code, _err = await _node_command("cluster", "status", "--redis", server.url, "--crawl", "c1")
        assert code == 0


async def test_a_node_process_joins_a_running_crawl_and_leaves_on_sigterm(tmp_path: Path) -> None:
    params = small_web(n_hosts=24)
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        config = cluster_config(params, out, srv.write_resolve_file(tmp_path / "resolve.txt"), n_buckets=M,
                                min_delay_s=0.2)  # the crawl must outlast the joiner start
        seeds = [srv.home_url(0), srv.home_url(3)]
        toml = write_toml(config, tmp_path / "crawl.toml")
        crawl = asyncio.create_task(_crawl(tmp_path, [*seeds, "--out", str(out), "--config", str(toml), "--workers",
                                                      "2", "--no-progress"], timeout_s=90.0))
        socket = out / "redis" / "redis.sock"
        joiner = None
        try:
            async with asyncio.timeout(60):
                while not socket.exists() or not (out / "nodes" / "w0" / "crawl.log.jsonl").exists():
                    await asyncio.sleep(0.05)
                joiner = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "webgather", "node", "--redis", f"unix://{socket}", "--crawl", "crawl",
                    "--out", str(out), "--node-id", "x1", stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT)
                while joiner.returncode is None and _final_fetches(out / "nodes" / "x1") < 5:
                    await asyncio.sleep(0.05)
                left_mid_crawl = not crawl.done() and joiner.returncode is None
                try:
                    joiner.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    left_mid_crawl = False
                joined_output, _ = await joiner.communicate()
            code, _killed = await crawl
        finally:
            if joiner is not None and joiner.returncode is None:
                joiner.kill()
                await joiner.wait()
            if not crawl.done():
                crawl.cancel()
        records = list(srv.records)
    assert code == 0 and joiner.returncode == 0, joined_output.decode(errors="replace")
    x1 = json.loads((out / "nodes" / "x1" / "summary.json").read_text())
    assert left_mid_crawl, "the crawl ended before the joined node could leave"
    assert x1["end"] == "left" and x1["pages"] >= 5 and x1["buckets"]["handoffs_in"] > 0
    assert x1["buckets"]["handoffs_out"] >= x1["buckets"]["handoffs_in"]
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == closure(model, seeds, config)
    assert duplicates(entries) == {}
    assert max(max_in_flight(records, lambda r: r.host).values()) == 1


async def test_a_node_whose_out_holds_the_crawl_stops_when_redis_lost_its_data(tmp_path: Path) -> None:
    """After a FLUSHALL (or a restart without persistence) a node with state of its own says the backend lost
    the crawl's data and exits 6; so does a node with no state of the crawl, whose line says it cannot tell a
    lost crawl from one never started (tests/cluster/test_cluster_join_after_flush.py: with the shared store it can)."""
    from webgather.cluster import definition
    from webgather.cluster.embedded import EmbeddedRedis

    config = cluster_config(small_web(), tmp_path / "crawl", tmp_path / "none.txt", n_buckets=M)
    (tmp_path / "crawl").mkdir()
    definition.save(tmp_path / "crawl", definition.CrawlDefinition.of(config, ["http://h0001.web.test/"], 1.0))
    with EmbeddedRedis(tmp_path / "redis") as server:
        code, err = await _node_command("node", "--redis", server.url, "--crawl", "c1", "--out",
                                        str(tmp_path / "crawl"))
        assert code == 6 and err.count("\n") == 1 and "Redis lost the crawl's data" in err, err
        (tmp_path / "restarted" / "nodes" / "n9" / "state").mkdir(parents=True)  # a node's own state, no definition
        code, err = await _node_command("node", "--redis", server.url, "--crawl", "c1", "--node-id", "n9", "--out",
                                        str(tmp_path / "restarted"))
        assert code == 6 and err.count("\n") == 1 and "Redis lost the crawl's data" in err, err
        # the crawl's first node restarted (crawl --redis): before, it defined the crawl afresh and started again
        code, err = await _node_command("crawl", "http://127.0.0.1:1/", "--allow-address", "127.0.0.1", "--redis",
                                        server.url, "--crawl", "c1", "--node-id", "n9", "--out",
                                        str(tmp_path / "restarted"))
        assert code == 6 and err.count("\n") == 1 and "Redis lost the crawl's data" in err, err
        code, err = await _node_command("node", "--redis", server.url, "--crawl", "c1", "--out", str(tmp_path / "new"))
        assert code == 6 and err.count("\n") == 1 and "never started" in err and "lost its data" in err, err
