"""A bucket's robots.txt rules and cookies move with it: three nodes, one joining mid-crawl and one leaving
later, ask each host for robots.txt at most once within the TTL (counted by the servers), and the new owner
of a host sends the session cookie the host set for the old owner (a cookie-gated site answers 403 without it)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web
from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, small_web

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of, initial, plan_join
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl
from webgather.runtime.member.node import ClusterNode
from webgather.testweb import TestWebServer, WebModel, closure, max_in_flight
from webgather.testweb.params import ROBOTS_KINDS, FaultRates
from webgather.urls import host_key

M = 64
GATED_PAGES = 60
"""Pages of each cookie-gated host: enough that its bucket moves while some are still queued."""


class GatedSites:
    """Hosts ``gN.web.test`` on one loopback port: ``/`` sets a session cookie and links to
    ``/p1``..``/pN``, which answer 403 without it. ``requests``: (host, path, Cookie header, status)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str | None, int]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> GatedSites:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def _reply(self, host: str, path: str, cookie: str | None, response: web.Response) -> web.Response:
        self.requests.append((host, path, cookie, response.status))
        return response

    async def _answer(self, request: web.Request) -> web.Response:
        host, path, cookie = request.host.partition(":")[0], request.path, request.headers.get("Cookie")
        session = f"sid={host.split('.')[0]}-s3ss10n"
        if path == "/robots.txt":
            return self._reply(host, path, cookie, web.Response(text="User-agent: *\nDisallow: /private/\n"))
        if path == "/":
            links = "".join(f'<a href="/p{k}">{k}</a> ' for k in range(1, GATED_PAGES + 1))
            response = web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
            response.headers.add("Set-Cookie", f"{session}; Path=/; HttpOnly")
            return self._reply(host, path, cookie, response)
        if cookie is None or session not in cookie:
            return self._reply(host, path, cookie, web.Response(status=403, text="no session"))
        await asyncio.sleep(0.01)
        return self._reply(host, path, cookie, web.Response(text="<html><body>in</body></html>",
                                                            content_type="text/html"))


def _moving_hosts(port: int, count: int) -> list[str]:
    """Gated host names whose bucket goes from a or b to c when c joins (the tables are deterministic)."""
    before, after = initial(["a", "b"], M), plan_join(initial(["a", "b"], M), "c")
    moved = {b for b in range(M) if before.owners[b] != after.owners[b]}
    names = (f"g{i}.web.test" for i in range(1000))
    return [n for n in names if bucket_of(f"{n}:{port}", M) in moved][:count]


async def _wait(predicate: Callable[[], bool], timeout_s: float = 60.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


def _web() -> Any:
    # no robots.txt that fails (5xx, retried: legitimately more than one request) and none that redirects
    # (a redirect hop after the bucket left is fenced: the new owner asks again, as a table change requires)
    kinds = tuple((k, 1.0) for k in ROBOTS_KINDS if k not in ("error", "redirect"))
    rates = dataclasses.replace(FaultRates(), calendar=0.0, deep_path=0.0, reset=0.0, reset_headers=0.0,
                                truncated=0.0, very_slow=0.0)
    return small_web(n_hosts=60, mean_pages_per_host=8.0, robots_mix=kinds, faults=rates)


async def test_a_join_moves_robots_rules_and_cookies_with_the_buckets(tmp_path: Path) -> None:
    params = _web()
    model = WebModel(params)
    out = tmp_path / "crawl"
    nodes: dict[str, ClusterNode] = {}
    async with TestWebServer(model) as srv, GatedSites() as gated:
        gated_hosts = _moving_hosts(gated.port, 3)
        resolve = srv.write_resolve_file(tmp_path / "resolve.txt")
        resolve.write_text(resolve.read_text() + "".join(f"{h} 127.0.0.1\n" for h in gated_hosts))
        config = cluster_config(params, out, resolve, n_buckets=M, min_delay_s=0.05)
        config = dataclasses.replace(config, fetch=dataclasses.replace(  # a loaded machine times nothing out
            config.fetch, total_timeout_s=10.0, connect_timeout_s=10.0))
        web_seeds = [srv.home_url(0), srv.home_url(5)]
        hub = InProcessHub(M)
        crawl = await start_crawl(hub, config, [*web_seeds, *(gated.url(h) for h in gated_hosts)], nodes=["a", "b"])

        def run(node: str) -> Any:
            return run_cluster_node(hub, crawl.crawl_config(out_dir=str(out)), node_id=node,
                                    nodes_dir=out / "nodes", epoch=crawl.epoch,
                                    on_start=lambda n: nodes.__setitem__(n.node_id, n))

        def homes_served() -> bool:
            return {h for h, p, _c, _s in gated.requests if p == "/"} == set(gated_hosts)

        def pages() -> int:
            return sum(n.parts.stats.pages for n in nodes.values())

        async with asyncio.timeout(120), asyncio.TaskGroup() as group:
            tasks = {node: group.create_task(run(node)) for node in ("a", "b")}
            await _wait(homes_served)  # every session cookie was set at a or b
            tasks["c"] = group.create_task(run("c"))
            await _wait(lambda: "c" in nodes and bool(nodes["c"].ownership.ready)
                        and all(n.ownership.applied() for n in nodes.values()))
            joined_at = pages()
            await _wait(lambda: pages() >= joined_at + 40)
            nodes["a"].leave()  # and a graceful leave: a's buckets go to b and c with their rules
        records = list(srv.records)
    summaries = {node: task.result() for node, task in tasks.items()}
    assert [summaries[n]["end"] for n in "abc"] == ["left", "done", "done"]
    assert summaries["c"]["buckets"]["handoffs_in"] > 0 and summaries["a"]["buckets"]["handoffs_out"] > 0

    robots = Counter(r.host for r in records if r.path == "/robots.txt")
    robots.update(h for h, p, _c, _s in gated.requests if p == "/robots.txt")
    assert len(robots) == params.n_hosts + len(gated_hosts)
    assert {h: n for h, n in robots.items() if n > 1} == {}, "robots.txt asked again within its TTL"

    entries = fetch_entries(out)
    assert duplicates(entries) == {}
    assert {e["url"] for e in entries if ".web.test:" + str(srv.port) in e["url"]} == closure(model, web_seeds, config)
    by_c = [e["url"] for e in entries if e["node"] == "c" and host_key(e["url"]).split(".")[0] in
            {h.split(".")[0] for h in gated_hosts}]
    assert by_c, "no gated page was left for the new owner"
    served = {(h, p): (c, s) for h, p, c, s in gated.requests}
    for url in by_c:
        host, path = host_key(url).partition(":")[0], url.split(str(gated.port), 1)[1]
        cookie, status = served[(host, path)]
        assert status == 200 and cookie == f"sid={host.split('.')[0]}-s3ss10n", (url, cookie, status)
    assert all(s == 200 for h, p, _c, s in gated.requests if p != "/robots.txt")
    assert all(n <= 1 for n in max_in_flight(records, lambda r: r.host).values())
