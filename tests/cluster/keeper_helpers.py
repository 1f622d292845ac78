"""A bucket keeper on its own (no crawl, no node): for the tests of hand-off paths through one keeper."""

from __future__ import annotations

from types import SimpleNamespace

from webgather.clock import FakeClock
from webgather.cluster.handoff import Ownership
from webgather.cluster.mapping import BucketTable, bucket_of
from webgather.cluster.transport import UrlTransport
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.bucket import BucketState
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


def one_bucket_table(version: int, n_buckets: int, bucket: int, owner: str) -> BucketTable:
    """A table in which ``owner`` owns ``bucket`` and node ``x`` every other one."""
    return BucketTable(version, n_buckets, tuple(owner if b == bucket else "x" for b in range(n_buckets)))


def adopted(node: str, n_buckets: int, bucket: int, owners: list[str]) -> Ownership:
    """``node``'s ownership after adopting one table per entry of ``owners`` (``bucket``'s owner in it)."""
    ownership = Ownership(node)
    for version, owner in enumerate(owners, 1):
        ownership.adopt(one_bucket_table(version, n_buckets, bucket, owner), float(version))
    return ownership


def fetched_and_queued(n_buckets: int, bucket: int) -> tuple[BucketState, CrawlItem, CrawlItem]:
    """A bucket's state at a node that fetched a host's home page and has another page queued:
    (state, fetched item, queued item)."""
    host = next(f"h{i}.test" for i in range(10_000) if bucket_of(f"h{i}.test", n_buckets) == bucket)
    fetched, queued = crawl_item(f"http://{host}/"), crawl_item(f"http://{host}/a")
    source = plain_frontier(n_buckets)
    source.add([fetched, queued], 0.0)
    taken, _ = source.next_ready(0.0)
    assert taken is not None and taken.url == fetched.url
    source.complete(taken, 1.0)
    return source.export_bucket(bucket), fetched, queued
