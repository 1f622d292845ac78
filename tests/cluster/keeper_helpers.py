"""A bucket keeper on its own (no crawl, no node): for the tests of hand-off paths through one keeper."""

from __future__ import annotations

from types import SimpleNamespace

from webgather.clock import FakeClock
from webgather.cluster.handoff import Ownership
from webgather.cluster.transport import UrlTransport
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.member.buckets import BucketKeeper
from webgather.urls import fingerprint


def plain_frontier(n_buckets: int) -> Frontier:
    """An in-memory frontier of ``n_buckets`` buckets, 0.5 s between requests to a host."""
    return Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=0.5), n_buckets=n_buckets)


def crawl_item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


def lone_keeper(ownership: Ownership, transport: UrlTransport, frontier: Frontier, alive: set[str]) -> BucketKeeper:
    """A keeper whose crawl only queues what it is given, ``alive`` the members it last saw."""
    crawl = SimpleNamespace(add_local=frontier.add, adopt_hosts=lambda hosts: list(hosts))
    keeper = BucketKeeper(SimpleNamespace(frontier=frontier, clock=FakeClock()),  # type: ignore[arg-type]
                          crawl, ownership, transport, None,  # type: ignore[arg-type]
                          claim_idle_s=60.0, receive_block_s=0.0)
    keeper.members_alive(alive)
    return keeper
