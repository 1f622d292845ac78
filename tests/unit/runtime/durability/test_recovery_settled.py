"""A dead node's buckets recovered from its disk carry its hosts' robots rules and cookies too."""

from __future__ import annotations

import time
from pathlib import Path

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of
from webgather.cluster.wire import Handoff, decode
from webgather.config import ClusterConfig, CrawlConfig
from webgather.fetch.cookies import CrawlCookies
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.durability.recovery import recover_node
from webgather.runtime.engine.robots_store import RobotsStore
from webgather.urls import fingerprint

M = 64


async def test_recovery_from_disk_sends_the_dead_nodes_rules_and_cookies(tmp_path: Path) -> None:
    config = CrawlConfig(cluster=ClusterConfig(n_buckets=M))
    state_dir = tmp_path / "nodes" / "dead" / "state"
    frontier = Frontier.open(state_dir, config.frontier, config.politeness, n_buckets=M)
    frontier.add([CrawlItem("http://a.test/q", fingerprint("http://a.test/q"))], 0.0)
    frontier.close()
    robots = RobotsStore.open(state_dir)
    robots.put("a.test", time.time() + 600.0, b"D")
    robots.close()
    jar = CrawlCookies()
    jar.store("http://a.test/", (("Set-Cookie", "sid=1; Path=/"),))
    jar.save(state_dir / "cookies.json")
    hub = InProcessHub(M)
    bucket = bucket_of("a.test", M)
    await recover_node("dead", (bucket,), nodes_dir=tmp_path / "nodes", config=config, frontier_cls=Frontier,
                       transport=hub.transport("x"), coordinator=hub.coordinator())
    sent = decode((await hub.transport("y").receive([bucket], 10, 0.1))[0].payload)
    assert isinstance(sent, Handoff) and sent.sender == "dead"
    (settled,) = sent.state.settled
    assert settled.host == "a.test" and settled.robots == b"D" and 590.0 < settled.robots_ttl_s <= 600.0
    assert b"sid" in settled.cookies
