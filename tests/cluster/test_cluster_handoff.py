"""Ownership (bucket states of a node across tables) and the coordinating duty's pure parts."""

from __future__ import annotations

from webgather.cluster.handoff import Action, Ownership
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import BucketTable, initial, plan_join, plan_leave
from webgather.cluster.membership import Coordinating, dead_nodes, recoveries_due, settled
from webgather.cluster.transport import Delivery
from webgather.clock import FakeClock


def _d(bucket: int, i: int = 1) -> Delivery:
    return Delivery(bucket, str(i), b"x")


def test_first_table_makes_own_buckets_ready() -> None:
    own = Ownership("a")
    table = initial(["a", "b"], 8)
    assert own.adopt(table, 0.0).gained == ()
    assert own.reading() == [0, 1, 2, 3] and own.applied()
    assert own.classify(_d(0), None, {"a"}) is Action.APPLY
    assert own.classify(_d(5), None, {"a"}) is Action.FORWARD


def test_a_join_moves_buckets_to_awaiting_and_leaving() -> None:
    table = initial(["a", "b"], 8)
    joined = plan_join(table, "c")
    a, c = Ownership("a"), Ownership("c")
    a.adopt(table, 0.0)
    c.adopt(table, 0.0)
    lost = a.adopt(joined, 1.0).lost
    gained = c.adopt(joined, 1.0).gained
    assert lost and set(lost) <= set(gained)
    bucket = lost[0]
    assert not a.is_ready(bucket) and bucket in a.leaving and not a.applied()
    # c holds batches until the hand-off from a (the owner in its previous table) arrives
    assert c.classify(_d(bucket, 1), None, {"a", "b", "c"}) is Action.HOLD
    assert c.classify(_d(bucket, 2), "b", {"a", "b", "c"}) is Action.HOLD
    assert c.classify(_d(bucket, 3), "a", {"a", "b", "c"}) is Action.RELEASE
    assert [d.delivery_id for d in c.release(bucket)] == ["1", "2"]
    assert c.is_ready(bucket)
    a.handed_over(bucket)
    assert bucket not in a.leaving


def test_reclaimed_deliveries_lead_what_an_awaited_bucket_holds() -> None:
    """A dead previous owner's unacked deliveries, claimed when the bucket was gained, come before
    what arrived since; a bucket no longer awaited is left alone."""
    table = initial(["a", "b"], 8)
    c = Ownership("c")
    c.adopt(table, 0.0)
    awaited = sorted(c.adopt(plan_join(table, "c"), 1.0).gained)
    bucket, released = awaited[0], awaited[1]
    assert c.classify(_d(bucket, 3), None, {"c"}) is Action.HOLD
    c.release(released)
    assert not c.awaiting[bucket].claimed
    c.reclaimed([bucket, released], {bucket: [_d(bucket, 1), _d(bucket, 2)], released: [_d(released, 9)]})
    assert c.awaiting[bucket].claimed and released not in c.awaiting
    assert [d.delivery_id for d in c.release(bucket)] == ["1", "2", "3"]


def test_buckets_awaited_from_a_gone_sender_are_listed_once_after_the_grace() -> None:
    table = initial(["a", "b"], 12)
    c = Ownership("c")
    c.adopt(table, 0.0)
    c.adopt(plan_join(table, "c"), 1.0)
    by_sender: dict[str, list[int]] = {}
    for bucket, waiting in sorted(c.awaiting.items()):
        by_sender.setdefault(waiting.expected or "", []).append(bucket)
    assert set(by_sender) == {"a", "b"}
    assert c.gone(2.0, 1.0, {"a", "b", "c"}) == {}
    assert c.gone(3.0, 1.0, {"b", "c"}) == {}  # a just went missing: its lease may still run
    assert c.gone(3.5, 1.0, {"a", "b", "c"}) == {}  # back: the grace starts again
    assert c.gone(4.0, 1.0, {"b", "c"}) == {}
    assert c.gone(5.0, 1.0, {"b", "c"}) == {"a": by_sender["a"]}
    c.restored(by_sender["a"])
    assert c.gone(9.0, 1.0, {"b", "c"}) == {}  # restored once
    assert c.gone(9.0, 1.0, {"c"}) == {}
    assert c.gone(10.0, 1.0, {"c"}) == {"b": by_sender["b"]}


def test_a_dead_senders_handoff_releases_and_overdue_buckets_are_listed() -> None:
    table = initial(["a", "b"], 4)
    c = Ownership("c")
    c.adopt(table, 0.0)
    c.adopt(plan_join(table, "c"), 1.0)
    bucket = next(iter(c.awaiting))
    expected = c.awaiting[bucket].expected
    other = "a" if expected == "b" else "b"
    assert c.classify(_d(bucket), other, {"c", "a", "b"}) is Action.HOLD  # alive, not the expected sender
    # zz is dead: its state (re-sent under its id) is older than the one the live expected sender sends
    assert c.classify(_d(bucket, 2), "zz", {"c", "a", "b"}) is Action.HOLD
    assert c.classify(_d(bucket, 3), "zz", {"c", other}) is Action.RELEASE  # the expected sender is dead too
    assert c.overdue(5.0, 10.0, {"c"}) == []
    assert c.overdue(12.0, 10.0, {"c"}) == sorted(c.awaiting)
    assert c.overdue(12.0, 10.0, {"c", expected}) == [b for b in sorted(c.awaiting) if c.awaiting[b].expected != expected]


def test_buckets_awaited_from_a_restarted_node_that_never_held_them_are_restored_after_the_timeout() -> None:
    """Seen in the nemesis (seed 12): b, restarted while a was frozen, took a's buckets (v2) and read
    its first table only after a's return gave them back (v3). b hands over nothing; a read its own
    hand-off of v2 and held it behind b's, which never comes: the crawl never ended."""
    v1 = initial(["a", "b"], 8)
    v2 = plan_leave(v1, "a")
    v2 = BucketTable(v1.version + 1, v2.n_buckets, v2.owners)
    v3 = BucketTable(v2.version + 1, v1.n_buckets, v1.owners)  # a is back: its buckets return
    a, b = Ownership("a"), Ownership("b")
    a.adopt(v1, 0.0)
    lost = a.adopt(v2, 1.0).lost
    for bucket in lost:  # a hands these over, sender a, on their streams
        a.handed_over(bucket)
    b.adopt(v3, 2.0)  # b's first table: its buckets are ready, it owes nobody a hand-off
    back = [bucket for bucket in a.adopt(v3, 2.0).gained if bucket in lost]
    assert back and all(a.awaiting[bucket].expected == "b" for bucket in back)
    assert a.classify(_d(back[0]), "a", {"a", "b"}) is Action.HOLD  # its own hand-off, behind b's
    members = {"a": {"version": v3.version, "applied": False}, "b": {"version": v3.version, "applied": b.applied()}}
    assert settled(members, a.version) == {"b"}
    assert a.silent(5.0, 10.0, settled(members, a.version)) == set()  # not late yet
    silent = a.silent(12.5, 10.0, settled(members, a.version))
    assert silent == {"b"}
    assert a.gone(12.5, 1.0, {"a", "b"} - silent) == {}  # the grace starts
    assert set(a.gone(14.0, 1.0, {"a", "b"} - silent)["b"]) >= set(back)
    assert settled({"b": {"version": 1, "applied": True}}, 2) == set()  # an older table: hand-offs may follow
    assert settled({"b": {"version": 2, "applied": False}}, 2) == set()


def test_dead_nodes_need_a_full_grace_period() -> None:
    table = initial(["a", "b"], 4)
    missing: dict[str, float] = {}
    assert dead_nodes(table, {"a": {}}, missing, 0.0, 2.0) == []
    assert dead_nodes(table, {"a": {}}, missing, 1.9, 2.0) == []
    assert dead_nodes(table, {"a": {}}, missing, 2.0, 2.0) == ["b"]
    assert dead_nodes(table, {"a": {}, "b": {}}, missing, 3.0, 2.0) == [] and missing == {}
    assert recoveries_due({"recover.wanted.b": 2, "recover.done.b": 1, "recover.wanted.c": 1,
                           "recover.done.c": 1}) == ["b"]


async def test_coordinating_creates_the_table_then_detects_the_end() -> None:
    clock = FakeClock()
    hub = InProcessHub(8, clock)
    coord = hub.coordinator()
    pending = [0]

    async def scan() -> int:
        return pending[0]

    async def recover(node: str, buckets: tuple[int, ...]) -> None:
        raise AssertionError("nobody died")

    duty = Coordinating(coord, 8, clock, grace_s=5.0, recover=recover, requeue=hub.transport("a").requeue,
                        scan_pending=scan)
    await coord.heartbeat("a", {}, 10.0)
    await duty.tick()
    table = await coord.get_table()
    assert table is not None and table.nodes == ("a",)
    await coord.incr("runs")

    async def beat(idle: bool, activity: int) -> None:
        probe = (await coord.counters()).get("probe", 0)
        await coord.heartbeat("a", {"idle": idle, "activity": activity, "probe": probe,
                                    "version": table.version, "applied": True}, 10.0)

    for activity in range(4):  # busy: never done
        await beat(False, activity)
        await duty.tick()
    pending[0] = 1
    for _ in range(3):  # idle but a batch is pending: not done
        await beat(True, 9)
        await duty.tick()
    pending[0] = 0
    await beat(True, 9)
    await duty.tick()  # first holding wave
    assert (await coord.counters()).get("done", 0) == 0
    await beat(True, 9)
    await duty.tick()
    assert (await coord.counters())["done"] == 1

