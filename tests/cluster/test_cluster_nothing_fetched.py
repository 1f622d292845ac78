"""Exit 5 ("nothing fetched") on a cluster node is judged on the crawl, not on the node's own fetches.

Two ``webgather node`` processes share a crawl whose only answering host is in one node's buckets; the
other's hold one seed whose host refuses connections. That node tries and gets no answer of its own, while
the crawl fetched its pages. Before: it exited 5, which says every fetch failed, e.g. every seed's host is
unreachable. Now both exit 0: each node counts in Redis that it had an answer (``answered``), and a node
with none of its own reads the crawl's count.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

from cluster_crawl_helpers import cluster_config, small_web
from cluster_process_helpers import finish, start_webgather
from test_cluster_redis_outage import redis_server  # noqa: F401

from webgather.buckets import bucket_of
from webgather.cluster.embedded import EmbeddedRedis
from webgather.cluster.mapping import initial
from webgather.exitcodes import ExitCode
from webgather.testweb import TestWebServer, WebModel
from webgather.urls import host_key

M = 16


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _url_in(buckets: set[int]) -> tuple[str, str]:
    """A host of the web's domain, and a URL of it that nothing answers, whose bucket is one of ``buckets``."""
    port = _closed_port()
    return next((name, url) for name, url in ((f"dead{k}.web.test", f"http://dead{k}.web.test:{port}/")
                                              for k in range(10_000)) if bucket_of(host_key(url), M) in buckets)


async def test_a_node_that_fetched_nothing_of_its_own_exits_0_when_the_crawl_fetched(
        tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    from webgather.cluster.redis import RedisBackend
    from webgather.runtime.launch.cluster import start_crawl

    params = small_web(n_hosts=1)
    table = initial(["a", "b"], M)
    async with TestWebServer(WebModel(params)) as srv:
        home = srv.home_url(0)
        web = table.owners[bucket_of(host_key(home), M)]  # the node that owns the web's host (the port decides)
        other = "b" if web == "a" else "a"
        dead, dead_url = _url_in({b for b, owner in enumerate(table.owners) if owner == other})
        resolve = srv.write_resolve_file(tmp_path / "resolve.txt")
        resolve.write_text(resolve.read_text() + f"{dead} 127.0.0.1\n")
        config = cluster_config(params, tmp_path / "crawl", resolve, n_buckets=M)
        backend = await RedisBackend.connect(redis_server.url, "nf", M)
        try:
            await start_crawl(backend, config, [home, dead_url], nodes=list(table.nodes))
        finally:
            await backend.aclose()
        procs = {node: await start_webgather("node", "--redis", redis_server.url, "--crawl", "nf", "--out",
                                             str(tmp_path / node), "--node-id", node) for node in ("a", "b")}
        results = dict(zip(procs, await asyncio.gather(*(finish(proc, 120.0) for proc in procs.values()))))
    summaries = {node: json.loads((tmp_path / node / "nodes" / node / "summary.json").read_text()) for node in procs}
    assert summaries[web]["pages"] > 0 and summaries[web]["status"], summaries[web]
    mute = summaries[other]
    assert not mute["status"] and sum(mute["errors"].values()) > 0, mute  # it tried, and had no answer of its own
    for node, (code, output) in results.items():
        assert code == ExitCode.DONE, f"{node}: exit {code}\n{output}"
