"""The GNP state contract (``--partition-by gnp``), over the in-process hub and embedded Redis."""

from __future__ import annotations

import asyncio

import pytest

from test_transport_contract import Harness, harness, redis_server  # noqa: F401  (fixtures)
from webgather.cluster.positions import Placement, positions_of
from webgather.errors import ClusterError


async def test_probes_are_per_node_and_overwritten(harness: Harness) -> None:
    book, other = positions_of(harness.backend), positions_of(await harness.other())
    assert await book.get_probes() == {}
    await book.publish_probe("n1", [10.5, 20.0, 3.25])
    await other.publish_probe("n2", [1.0, 2.0, 3.0])
    await other.publish_probe("n1", [11.0, 21.0, 4.0])  # a node measures again after a restart
    assert await book.get_probes() == {"n1": (11.0, 21.0, 4.0), "n2": (1.0, 2.0, 3.0)}


async def test_asks_are_read_from_an_index_by_every_node(harness: Harness) -> None:
    book, other = positions_of(harness.backend), positions_of(await harness.other())
    assert await book.asked(0) == []
    await book.ask(["a.test", "b.test:8080"])
    await other.ask(["c.test"])
    await other.ask([])
    assert await other.asked(0) == ["a.test", "b.test:8080", "c.test"]
    assert await book.asked(2) == ["c.test"] and await book.asked(3) == []


async def test_latencies_gather_per_host_from_every_node(harness: Harness) -> None:
    book, other = positions_of(harness.backend), positions_of(await harness.other())
    await book.publish_latencies("n1", {"a.test": 12.5, "b.test": 40.0})
    await other.publish_latencies("n2", {"a.test": 30.0})
    await other.publish_latencies("n2", {})
    assert await book.get_latencies(["a.test", "b.test", "zz.test"]) == {
        "a.test": {"n1": 12.5, "n2": 30.0}, "b.test": {"n1": 40.0}}


async def test_placements_first_published_wins_for_concurrent_nodes(harness: Harness) -> None:
    books = [positions_of(harness.backend)] + [positions_of(await harness.other()) for _ in range(3)]
    answers = await asyncio.gather(*(
        book.publish_placements({f"h{i}.test": Placement(i % 64, f"n{k}", (0.5 * i, -1e-3)) if i % 2 else Placement(i % 64)
                                 for i in range(1200)})
        for k, book in enumerate(books)))
    assert all(answer == answers[0] for answer in answers)
    stored = await books[0].get_placements()
    assert len(stored) == 1200 and stored == answers[0]  # more than one chunk of the Redis backend
    assert {p.node for h, p in stored.items() if int(h[1:-5]) % 2 == 0} == {None}  # the fallback round-trips
    assert await books[1].get_placements(["h3.test", "nope.test"]) == {"h3.test": stored["h3.test"]}
    assert await books[1].publish_placements({}) == {}


async def test_load_adds_up_the_hosts_given_to_each_node(harness: Harness) -> None:
    book, other = positions_of(harness.backend), positions_of(await harness.other())
    assert await book.get_load() == {}
    await asyncio.gather(book.add_load({"n1": 2, "n2": 1}), other.add_load({"n1": 3, "n3": 0}), other.add_load({}))
    assert await other.get_load() == {"n1": 5, "n2": 1}


async def test_bad_arguments_are_cluster_errors(harness: Harness) -> None:
    book = positions_of(harness.backend)
    bad_calls = [book.publish_probe("n1", [1.0, 0.0]), book.publish_probe("n1", [float("nan")]),
                 book.publish_probe("", [1.0]), book.ask("a.test"), book.asked(-1),  # type: ignore[arg-type]
                 book.publish_latencies("n1", {"a.test": -3.0}), book.get_latencies([""]),
                 book.publish_placements({"a.test": "3 n1"}),  # type: ignore[dict-item]
                 book.publish_placements({"a.test": Placement(-1)}),
                 book.add_load({"n1": -1}), book.add_load({"": 1}), book.add_load({"n1": 1.5})]  # type: ignore[dict-item]
    for call in bad_calls:
        with pytest.raises(ClusterError):
            await call
    for text in ("", "x n1", "3", "-1 n1", "3 n1 1.0,zz", "3 n1 nan"):
        with pytest.raises(ClusterError):
            Placement.decode(text)
    for placement in (Placement(7, "w1"), Placement(7, "w1", (1.5, -2.25)), Placement(0)):
        assert Placement.decode(placement.encode()) == placement
