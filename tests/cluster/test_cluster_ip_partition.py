"""``--partition-by ip`` with addresses shared through the backend: the first published answer wins.

Nodes resolve with their own ``--resolve`` files here (never real DNS); the
files disagree on purpose, and the nodes must still agree on every host's
partition key, connect to that address, and keep the per-IP cap cluster-wide.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from cluster_crawl_helpers import cluster_config, duplicates, fetch_entries, small_web

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of
from webgather.cluster.router import Router
from webgather.fetch.resolver import Resolver, load_resolve_file
from webgather.frontier.model import CrawlItem
from webgather.clock import FakeClock
from webgather.runtime.partition.addresses import SharedAddresses, learn_retrying
from webgather.runtime.launch.cluster import run_cluster_node, start_crawl, submit_seeds
from webgather.testweb import TestWebServer, WebModel, closure, max_in_flight
from webgather.urls import fingerprint

M = 64
MAP_A = {"a.test": "127.0.1.1", "b.test": "127.0.1.1", "c.test": "127.0.1.2"}
MAP_B = {"a.test": "127.0.1.7", "b.test": "127.0.1.8", "c.test": "127.0.1.2"}


def _node(hub: InProcessHub, static: dict[str, str]) -> SharedAddresses:
    async def no_dns(host: str) -> list[str]:
        raise OSError(f"no DNS in tests: {host}")

    return SharedAddresses(hub.coordinator(), Resolver(FakeClock(), static=static, lookup=no_dns))


async def test_two_resolvers_that_disagree_get_the_first_published_answers() -> None:
    hub = InProcessHub(M)
    a, b = _node(hub, MAP_A), _node(hub, MAP_B)
    await a.learn(["a.test:8080", "c.test"])
    await asyncio.gather(b.learn(["a.test", "b.test", "c.test", "nx.test"]), a.learn(["b.test"]))
    await a.learn(["nx.test"])
    for host in ("a.test", "b.test", "c.test", "nx.test"):
        assert a.key(host) == b.key(host) is not None
    assert a.key("a.test:8080") == b.key("a.test") == "127.0.1.1"  # a published it first
    assert a.key("nx.test") == "nx.test"  # does not resolve: keyed by its name, on every node
    assert b.resolver is not None and await b.resolver.resolve("a.test") == "127.0.1.1"  # pinned
    assert a.key("zz.test") is None
    late = _node(hub, {})
    await late.refresh()
    assert late.by_name == a.by_name


async def test_the_router_parks_links_of_unknown_hosts_and_keeps_the_page_barrier() -> None:
    hub = InProcessHub(M)
    addresses = _node(hub, MAP_A)
    sent: list[str] = []
    local: list[CrawlItem] = []

    def add_local(items: list[CrawlItem], now: float) -> list[CrawlItem]:
        local.extend(items)
        return items

    mine = bucket_of("127.0.1.1", M)
    router = Router("n", hub.transport("n"), FakeClock(), n_buckets=M, add_local=add_local,
                    is_local=lambda b: b == mine, partition_key=addresses.key, batch_wait_s=0.0,
                    learn=lambda hosts: learn_retrying(addresses, hosts))
    urls = ["http://a.test/1", "http://b.test/2", "http://c.test/3"]
    assert router.route([CrawlItem(u, fingerprint(u)) for u in urls], 0.0) == []  # all parked
    assert not router.idle() and router.stats.parked == 3
    flusher = asyncio.ensure_future(router.run())
    await asyncio.wait_for(router.wait_routed(), 5.0)
    assert sorted(i.url for i in local) == urls[:2]
    for delivery in await hub.transport("r").receive([bucket_of("127.0.1.2", M)], 10, 0):
        sent.append(delivery.payload.decode(errors="replace"))
    assert any("c.test/3" in payload for payload in sent)
    router.close()
    await flusher
    assert router.idle()


def _shifted_resolve_file(resolve: Path, out: Path) -> dict[str, str]:
    """Another node's view: every host moved to the next address (all are served)."""
    mapping = load_resolve_file(resolve)
    ips = sorted(set(mapping.values()))
    shift = {ip: ips[(i + 1) % len(ips)] for i, ip in enumerate(ips)}
    out.write_text("".join(f"{host} {shift[ip]}\n" for host, ip in mapping.items()))
    return {host: shift[ip] for host, ip in mapping.items()}


async def test_nodes_with_different_resolve_files_agree_and_keep_the_per_ip_cap(tmp_path: Path) -> None:
    params = small_web(hosts_per_ip=3)
    model = WebModel(params)
    out = tmp_path / "crawl"
    async with TestWebServer(model) as srv:
        files = {"a": srv.write_resolve_file(tmp_path / "a.txt"), "b": tmp_path / "b.txt"}
        view_a, view_b = load_resolve_file(files["a"]), _shifted_resolve_file(files["a"], files["b"])
        config = cluster_config(params, out, files["a"], n_buckets=M, partition_by="ip")
        config = dataclasses.replace(config, politeness=dataclasses.replace(config.politeness,
                                                                              per_ip_connections=1))
        seeds = [srv.home_url(0), srv.home_url(3)]
        hub = InProcessHub(M)
        # one seed's host is published with b's view: which node discovers the other hosts first is
        # a race (node a usually wins all of them), so each view gets a host here for certain
        config_b = dataclasses.replace(config, fetch=dataclasses.replace(config.fetch, resolve_file=str(files["b"])))
        await submit_seeds(hub, config_b, seeds[1:])
        crawl = await start_crawl(hub, config, seeds, nodes=["a", "b"])
        async with asyncio.timeout(60):
            await asyncio.gather(*(
                run_cluster_node(hub, crawl.crawl_config(out_dir=str(out), **{"fetch.resolve_file": str(path)}),
                                 node_id=node, nodes_dir=out / "nodes", epoch=crawl.epoch)
                for node, path in files.items()))
        records = list(srv.records)
    entries = fetch_entries(out)
    assert {e["url"] for e in entries} == closure(model, seeds, config) and duplicates(entries) == {}
    published = await hub.coordinator().get_addresses()
    table = await hub.coordinator().get_table()
    assert table is not None
    won = {"a": 0, "b": 0}
    for entry in entries:
        host = entry["host"].split(":")[0]
        assert published[host] in (view_a[host], view_b[host])
        won["a" if published[host] == view_a[host] else "b"] += 1
        assert entry["node"] == table.owner_of(published[host]), entry  # both nodes used the first answer
    assert won["a"] and won["b"], won  # both resolvers published some of the answers used
    assert {r.local for r in records if r.host.split(":")[0] in published} <= set(published.values())
    assert all(r.local == published[r.host.split(":")[0]] for r in records if r.host.split(":")[0] in published)
    assert max(max_in_flight(records, lambda r: r.local).values()) == 1
