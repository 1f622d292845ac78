"""The crawl's end after a death, when the dead node had read (and not acked) deliveries of buckets it
no longer owned: with a shared store a node's acks wait for its next checkpoint, so the hand-offs and
batches it read in a bucket it then handed over stay pending for it. The end of the crawl waits for
every stream to be empty; those entries must go back to the buckets' owners when the node is found
dead, not only when the ``claim_idle_s`` sweep comes round (a crawl with ``claim_idle_s`` 60 s sat
idle past a minute for them)."""

from __future__ import annotations

from webgather.cluster.inprocess import InProcessHub, InProcessTransport
from webgather.cluster.mapping import BucketTable, initial
from webgather.cluster.membership import REQUEUED, Coordinating
from webgather.cluster.transport import Coordinator
from webgather.clock import FakeClock

M = 8


class _Survivor:
    """A live node as the coordinator sees it: it reads its buckets, acks at once, and beats."""

    def __init__(self, hub: InProcessHub, node: str) -> None:
        self.node, self.transport, self.coord = node, hub.transport(node), hub.coordinator()
        self.activity = 0
        self.applied: list[bytes] = []

    async def beat(self) -> None:
        table = await self.coord.get_table()
        assert table is not None
        got = await self.transport.receive(table.buckets_of(self.node), 100, 0)
        for delivery in got:
            self.applied.append(delivery.payload)
            await self.transport.ack(delivery.bucket, [delivery.delivery_id])
        self.activity += len(got)
        probe = (await self.coord.counters()).get("probe", 0)
        await self.coord.heartbeat(self.node, {"idle": True, "activity": self.activity, "probe": probe,
                                               "version": table.version, "applied": True}, 100.0)


def _duty(coord: Coordinator, clock: FakeClock, transport: InProcessTransport, recovered: list[str]) -> Coordinating:
    async def recover(node: str, buckets: tuple[int, ...]) -> bool:
        recovered.append(node)  # its own buckets: restored from its checkpoint (nothing to restore here)
        return True

    async def scan() -> int:
        return await transport.pending_total(range(M))

    return Coordinating(coord, M, clock, grace_s=1.0, recover=recover, requeue=transport.requeue,
                        scan_pending=scan, startup_grace_s=1.0)


async def _dead_reader(hub: InProcessHub, table: BucketTable) -> int:
    """Node b read a batch of a bucket c owns now (it had handed the bucket over) and dies without
    acking it; returns the bucket."""
    bucket = table.buckets_of("c")[0]
    await hub.transport("a").send(bucket, b"read by b, never acked")
    assert len(await hub.transport("b").receive([bucket], 10, 0)) == 1
    await hub.coordinator().heartbeat("b", {"idle": True, "version": table.version, "applied": True}, 1.0)
    return bucket


async def test_a_dead_nodes_unacked_reads_in_buckets_it_no_longer_owned_do_not_hold_the_end() -> None:
    clock = FakeClock()
    hub = InProcessHub(M, clock)
    coord = hub.coordinator()
    table = initial(["a", "b", "c"], M)
    assert await coord.cas_table(None, table)
    await coord.incr("runs")
    await _dead_reader(hub, table)
    a, c = _Survivor(hub, "a"), _Survivor(hub, "c")
    recovered: list[str] = []
    duty = _duty(coord, clock, hub.transport("a"), recovered)
    for _ in range(40):  # 20 s of fake time; nobody sweeps with claim_idle_s here
        for node in (a, c):
            await node.beat()
        await duty.tick()
        clock.advance(0.5)
        if (await coord.counters()).get("done", 0):
            break
    counters = await coord.counters()
    assert recovered == ["b"]
    assert counters.get("done") == 1, counters  # the crawl ended (old code: probe 38, never done)
    assert c.applied == [b"read by b, never acked"]  # once the owner got what b had read
    assert counters.get(REQUEUED) == 1, counters
