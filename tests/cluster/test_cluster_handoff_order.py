"""A bucket released with several deliveries held behind its awaited hand-off: the states among them are
imported before the URL batches, so a URL that a held state already saw (fetched) is not queued again."""

from __future__ import annotations

from types import SimpleNamespace

from webgather.clock import FakeClock
from webgather.cluster.handoff import Ownership
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of, initial, plan_leave
from webgather.cluster.wire import encode_batch, encode_handoff
from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.bucket import BucketState
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.runtime.member.buckets import BucketKeeper
from webgather.urls import fingerprint

M = 16


def _frontier() -> Frontier:
    return Frontier.open(None, FrontierConfig(), PolitenessConfig(min_delay_s=0.5), n_buckets=M)


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


async def test_a_held_state_filters_the_url_batches_held_with_it() -> None:
    """Seen in the nemesis (file seed 29): n1, cut from Redis, was declared dead; its buckets went to n2,
    and n1's state reached their streams twice (restored from its checkpoint, and its own hand-off once
    it was back), behind URL batches sent while it was cut. n2, black-holed, never read them; the next
    table gave the buckets back to n1, awaiting n2's hand-off: n2's checkpoint never held them, so an
    empty one. n1 imported the empty state, then applied the held deliveries in stream order: the
    batches queued links to pages its own held state had already fetched (the crawl's first pages,
    fetched again 11 s later), then that state came too late to stop them."""
    v1 = initial(["n1", "n2"], M)
    v2 = plan_leave(v1, "n2")
    bucket = next(b for b in range(M) if v1.owners[b] == "n2" and v2.owners[b] == "n1")
    host = next(f"h{i}.test" for i in range(10_000) if bucket_of(f"h{i}.test", M) == bucket)
    fetched = _item(f"http://{host}/")
    earlier = _frontier()  # n1's own earlier state of the bucket: its home page fetched
    earlier.add([fetched], 0.0)
    taken, _ = earlier.next_ready(0.0)
    assert taken is not None
    earlier.complete(taken, 1.0)
    state = earlier.export_bucket(bucket)
    assert not state.items and len(state.seen_keys) == 1

    hub = InProcessHub(M, FakeClock())
    others = hub.transport("n0")
    await others.send(bucket, encode_batch("n0", 1, [fetched]))  # a link to it, found while n1 was cut
    await others.send(bucket, encode_handoff("n1", 2, state))  # n1's state, restored from its checkpoint
    await others.send(bucket, encode_handoff("n2", 0, BucketState(bucket, M)))  # the awaited one: empty

    ownership = Ownership("n1")
    ownership.adopt(v1, 0.0)
    ownership.adopt(v2, 1.0)
    assert ownership.awaiting[bucket].expected == "n2"
    frontier = _frontier()
    crawl = SimpleNamespace(add_local=frontier.add, adopt_hosts=lambda hosts: list(hosts))
    transport = hub.transport("n1")
    keeper = BucketKeeper(SimpleNamespace(frontier=frontier, clock=FakeClock()), crawl,  # type: ignore[arg-type]
                          ownership, transport, None, claim_idle_s=5.0, receive_block_s=0.0)  # type: ignore[arg-type]
    keeper.alive = {"n1"}
    await keeper.process(await transport.receive([bucket], 10, 0))
    assert ownership.is_ready(bucket)
    assert frontier.queued == 0, "a page the held state had fetched was queued again"
    assert await transport.pending_count(bucket) == 0
