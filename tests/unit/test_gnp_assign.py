"""GNP assignment of a host: the K nearest nodes, the fallback, and placements shared first-wins."""

from __future__ import annotations

import asyncio
from collections import Counter

import numpy as np
import pytest

from webgather.cluster.gnp_assign import choose_placement, fallback, node_coordinates
from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import bucket_of, bucket_key, initial
from webgather.cluster.positions import Placement, positions_of
from webgather.config import ClusterConfig, CrawlConfig
from webgather.errors import ClusterError
from webgather.clock import SystemClock
from webgather.runtime.partition.gnp import GnpPlacements

M = 64
NODES = {"a": (0.0, 0.0), "b": (10.0, 0.0), "c": (0.0, 10.0), "d": (60.0, 60.0), "e": (62.0, 58.0)}
LANDMARKS = np.array([(5.0, 5.0), (70.0, 10.0), (10.0, 70.0), (50.0, 50.0), (90.0, 90.0)])


def _ms(a: tuple[float, float], b: tuple[float, float]) -> float:
    return float(np.hypot(a[0] - b[0], a[1] - b[1])) + 1.0


def _probes() -> dict[str, tuple[float, ...]]:
    return {n: tuple(_ms(xy, tuple(lm)) for lm in LANDMARKS) for n, xy in NODES.items()}


def _coords() -> dict[str, np.ndarray]:
    return node_coordinates(_probes(), len(LANDMARKS), 2, np.random.default_rng(0))


SITE = (2.0, 3.0)  # true order of nearness: a, c, b, then d, e far away
MEASURED = {n: _ms(xy, SITE) for n, xy in NODES.items()}


def test_top1_is_the_nearest_and_topk_takes_the_least_loaded_of_the_k_nearest() -> None:
    table, coords, rng = initial(NODES, M), _coords(), np.random.default_rng(1)
    top1 = {choose_placement("s.test", MEASURED, coords, table, 1, rng, load={"a": 50}) for _ in range(20)}
    assert {p.node for p in top1 if p} == {"a"}  # Top1: the nearest whatever its load
    given: Counter[str] = Counter()
    for _ in range(30):  # sites arriving one by one: each to the least loaded of a, b, c
        placement = choose_placement("s.test", MEASURED, coords, table, 3, rng, load=given)
        assert placement is not None and placement.node is not None
        given[placement.node] += 1
    assert given == {"a": 10, "b": 10, "c": 10}  # never d or e, far away, though they have no load
    assert choose_placement("s.test", MEASURED, coords, table, 3, rng).node == "a"  # type: ignore[union-attr]
    assert choose_placement("s.test", MEASURED, coords, table, 3, rng,
                            load={"a": 3, "b": 0, "c": 1, "d": 0}).node == "b"  # type: ignore[union-attr]
    assert choose_placement("s.test", MEASURED, coords, table, 3, rng,  # a tie: c, nearer than b (7.3 vs 8.5)
                            load={"a": 3, "b": 1, "c": 1}).node == "c"  # type: ignore[union-attr]
    placement = choose_placement("s.test", MEASURED, coords, table, 3, rng)
    assert placement is not None and table.owner(placement.bucket) == placement.node and len(placement.coord) == 2


def test_only_nodes_that_own_buckets_are_candidates_and_few_measurements_mean_none() -> None:
    coords, rng = _coords(), np.random.default_rng(2)
    table = initial(["b", "d", "e"], M)  # a and c left the table
    assert {choose_placement("s.test", MEASURED, coords, table, 1, rng).node for _ in range(5)} == {"b"}  # type: ignore[union-attr]
    assert choose_placement("s.test", {"a": MEASURED["a"], "b": MEASURED["b"]}, coords, table, 1, rng) is None
    assert choose_placement("s.test", {}, {}, initial(["a", "b"], M), 1, rng) is None
    lone = choose_placement("s.test", {}, {}, initial(["a"], M), 3, rng)
    assert lone is not None and lone.node == "a"
    assert node_coordinates({"a": (1.0, 2.0)}, 2, 2, rng) == {}  # one node: nothing to fit
    assert fallback("s.test", M) == Placement(bucket_of("s.test", M))


def _placements(hub: InProcessHub, node: str | None, wait_s: float = 0.3) -> GnpPlacements:
    cluster = ClusterConfig(n_buckets=M, partition_by="gnp", gnp_landmarks=("http://l1.test/", "http://l2.test/",
                                                                            "http://l3.test/", "http://l4.test/",
                                                                            "http://l5.test/"),
                            gnp_k=1, gnp_wait_s=wait_s)
    placements = GnpPlacements(positions_of(hub), hub.coordinator(), CrawlConfig(cluster=cluster), SystemClock(),
                               node=node)
    table = initial(NODES, M)
    placements.follow(lambda: table)
    return placements


async def test_a_measured_host_goes_near_and_an_unmeasured_one_falls_back_for_every_node() -> None:
    hub = InProcessHub(M)
    book = positions_of(hub)
    for node, probe in _probes().items():
        await book.publish_probe(node, probe)
    for node, ms in MEASURED.items():  # what the nodes' measuring loops would publish when asked
        await book.publish_latencies(node, {"s.test": ms})
    a, b = _placements(hub, "a"), _placements(hub, "b")
    started = asyncio.get_running_loop().time()
    await asyncio.gather(a.learn(["s.test", "nobody.test"]), b.learn(["nobody.test", "s.test"]))
    assert asyncio.get_running_loop().time() - started >= 0.3  # nobody.test waited for measurements
    assert a.placements == b.placements
    assert a.placements["s.test"].node == "a" and a.key("s.test") == bucket_key(a.placements["s.test"].bucket, M)
    assert a.placements["nobody.test"] == fallback("nobody.test", M)
    assert await book.asked(0)  # the hosts were asked for
    assert a.placed + b.placed == 1  # one GNP placement won; the fallback is the same whoever publishes it
    assert 1 <= a.fallbacks + b.fallbacks <= 2
    late = _placements(hub, "c")
    await late.refresh()
    assert late.placements == a.placements and late.key("zz.test") is None
    with pytest.raises(ClusterError):
        late.frontier_key("zz.test")


async def test_seeds_submitted_before_any_node_runs_fall_back_at_once() -> None:
    hub = InProcessHub(M)
    seeds = _placements(hub, None, wait_s=30.0)
    await asyncio.wait_for(seeds.learn(["s.test"]), 1.0)
    assert seeds.placements["s.test"] == fallback("s.test", M) and await positions_of(hub).asked(0) == []


async def test_each_host_is_placed_once_measured_and_hosts_met_meanwhile_are_asked_at_once() -> None:
    hub = InProcessHub(M)
    book = positions_of(hub)
    for node, probe in _probes().items():
        await book.publish_probe(node, probe)
    a = _placements(hub, "a", wait_s=3.0)
    loop = asyncio.get_running_loop()
    learning = loop.create_task(a.learn(["slow.test", "s.test"]))  # slow.test: nobody measures it for 3 s
    await asyncio.sleep(0.2)
    assert a.key("met.test") is None  # a link to a new host, met while the batch before it waits
    for node, ms in MEASURED.items():
        await book.publish_latencies(node, {"s.test": ms})
    started = loop.time()
    async with asyncio.timeout(2.0):  # s.test is placed as soon as it is measured, slow.test is still waited for
        while "s.test" not in await book.get_placements() or "met.test" not in await book.asked(0):
            await asyncio.sleep(0.02)
    assert loop.time() - started < 1.0 and not learning.done()
    assert (await book.get_placements())["s.test"].node == "a" and await book.get_load() == {"a": 1}
    await learning
    assert a.placements["slow.test"] == fallback("slow.test", M) and a.fallbacks == 1 and a.placed == 1
    assert (await book.asked(0)).count("met.test") == 1
    await a.learn(["met.test"])  # asked already: not asked again, and its wait counts from the first ask
    assert (await book.asked(0)).count("met.test") == 1 and a.placements["met.test"] == fallback("met.test", M)
