"""The IP-keyed frontier moves whole addresses between nodes, through the base hand-off."""

from __future__ import annotations

from webgather.cluster.mapping import bucket_of
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.model import CrawlItem
from webgather.runtime.partition.frontier import keyed_frontier
from webgather.urls import fingerprint

ADDRESS = {"a.test": "127.0.1.1", "b.test": "127.0.1.1", "c.test": "127.0.1.2"}


def _items(host: str, n: int) -> list[CrawlItem]:
    urls = [f"http://{host}/p/{i}" for i in range(n)]
    return [CrawlItem(u, fingerprint(u)) for u in urls]


def test_hosts_of_one_address_share_a_bucket_and_move_together() -> None:
    cls = keyed_frontier(ADDRESS.__getitem__)
    old = cls.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=0.0), n_buckets=64)
    new = cls.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=0.0), n_buckets=64)
    for host in ADDRESS:
        old.add(_items(host, 3), 0.0)
    bucket = bucket_of("127.0.1.1", 64)
    assert old.bucket_for("a.test") == old.bucket_for("b.test") == bucket
    state = old.export_bucket(bucket)
    assert {i.url.split("/")[2] for i in state.items} == {"a.test", "b.test"}
    assert new.import_bucket(state) == 6
    assert new.import_bucket(state) == 0, "a repeated hand-off must not queue URLs twice"
    old.drop_bucket(bucket)
    assert old.pending() == 3 and new.pending() == 6
    assert new.add(_items("a.test", 4), 0.0)[0].url == "http://a.test/p/3"
