"""The HostQueues contract, run over the memory and the SQLite backend (tiny RAM heads)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from webgather.errors import FrontierError
from webgather.frontier.model import CrawlItem
from webgather.frontier.queues import HostQueues, MemoryQueues
from webgather.frontier.queues_sqlite import SqliteQueues
from webgather.frontier.store import StateDB
from webgather.urls import fingerprint


@pytest.fixture(params=["memory", "sqlite", "sqlite-tiny-heads"])
def queues(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HostQueues]:
    if request.param == "memory":
        yield MemoryQueues()
        return
    db = StateDB(tmp_path / "q.db")
    tiny = request.param == "sqlite-tiny-heads"
    yield SqliteQueues(db, host_queue_memory=2 if tiny else 1000, queue_memory_items=3 if tiny else 10_000)
    db.close()


def it(path: str, depth: int = 0, host: str = "a.test", fp_top: bool = False) -> CrawlItem:
    url = f"http://{host}/{path}"
    fp = fingerprint(url) | (1 << 63) if fp_top else fingerprint(url)
    return CrawlItem(url, fp, depth=depth)


def drain(q: HostQueues, host: str) -> list[str]:
    out = []
    while True:
        try:
            item, _ = q.pop(host)
        except FrontierError:
            return out
        out.append(item.url.rsplit("/", 1)[1])
        q.finish(host, item, False)


def test_fifo_within_a_depth_lower_depth_first(queues: HostQueues) -> None:
    assert queues.push("a.test", [it("p1", 1), it("p2", 1), it("q0", 0)]) == 0.0
    assert queues.push("a.test", [it("p3", 1), it("q1", 0), it("r2", 2)]) == 0.0
    assert drain(queues, "a.test") == ["q0", "q1", "p1", "p2", "p3", "r2"]


def test_pop_returns_the_new_head_and_none_when_empty(queues: HostQueues) -> None:
    queues.push("a.test", [it("x", 0), it("y", 3)])
    first, head = queues.pop("a.test")
    assert (first.url, head) == ("http://a.test/x", 3.0)
    second, head = queues.pop("a.test")
    assert head is None
    with pytest.raises(FrontierError):
        queues.pop("a.test")
    with pytest.raises(FrontierError):
        queues.pop("nobody.test")
    queues.finish("a.test", first, False)
    queues.finish("a.test", second, False)


def test_retry_returns_the_item_to_its_place_with_attempt_plus_one(queues: HostQueues) -> None:
    queues.push("a.test", [it(f"p{i}") for i in range(6)])
    first, _ = queues.pop("a.test")
    again, head = queues.finish("a.test", first, True)
    assert again is not None and again.attempt == 1 and head == 0.0
    item, _ = queues.pop("a.test")
    assert item.url == first.url and item.attempt == 1
    queues.finish("a.test", item, False)
    assert drain(queues, "a.test") == [f"p{i}" for i in range(1, 6)]


def test_finish_of_an_item_not_in_flight_is_an_error(queues: HostQueues) -> None:
    queues.push("a.test", [it("x")])
    with pytest.raises(FrontierError):
        queues.finish("a.test", it("x"), False)
    item, _ = queues.pop("a.test")
    with pytest.raises(FrontierError):
        queues.finish("b.test", item, False)
    queues.finish("a.test", item, False)
    with pytest.raises(FrontierError):
        queues.finish("a.test", item, False)


def test_remove_host_returns_queued_items_in_order_but_not_those_in_flight(queues: HostQueues) -> None:
    queues.push("a.test", [it(f"p{i}", i % 2) for i in range(7)])
    taken, _ = queues.pop("a.test")
    assert [i.url.rsplit("/", 1)[1] for i in queues.items("a.test", 2)] == ["p2", "p4"]
    removed = [i.url.rsplit("/", 1)[1] for i in queues.remove_host("a.test")]
    assert removed == ["p2", "p4", "p6", "p1", "p3", "p5"]
    assert queues.items("a.test") == [] and queues.remove_host("a.test") == []
    queues.finish("a.test", taken, False)


def test_hosts_are_independent_and_fingerprints_use_all_64_bits(queues: HostQueues) -> None:
    queues.push("a.test", [it("a1", fp_top=True), it("a2")])
    queues.push("b.test:81", [it("b1", host="b.test:81", fp_top=True)])
    item, _ = queues.pop("b.test:81")
    assert item.fp >= 1 << 63
    queues.finish("b.test:81", item, False)
    assert drain(queues, "a.test") == ["a1", "a2"]
    queues.commit()


def test_random_operations_match_a_reference_model(queues: HostQueues) -> None:
    rng = random.Random(3)
    model: dict[str, list[tuple[int, int, str]]] = {}
    taken: dict[str, tuple[str, tuple[int, int, str], CrawlItem]] = {}
    seq = 0
    for step in range(400):
        host = f"h{rng.randrange(3)}.test"
        op = rng.random()
        if op < 0.45:
            batch = []
            for _ in range(rng.randrange(1, 5)):
                seq += 1
                depth = rng.randrange(3)
                batch.append(it(f"u{seq}", depth, host))
                model.setdefault(host, []).append((depth, seq, f"u{seq}"))
            queues.push(host, batch)
        elif op < 0.8 and model.get(host):
            expected = min(model[host])
            item, _ = queues.pop(host)
            assert item.url.rsplit("/", 1)[1] == expected[2], step
            model[host].remove(expected)
            taken[item.url] = (host, expected, item)
        elif taken:
            url = rng.choice(sorted(taken))
            h, entry, item = taken.pop(url)
            if rng.random() < 0.3:
                queues.finish(h, item, True)
                model.setdefault(h, []).append(entry)
            else:
                queues.finish(h, item, False)
        if step % 50 == 0:
            queues.commit()
    for host, entries in model.items():
        assert [i.url.rsplit("/", 1)[1] for i in queues.items(host)] == [e[2] for e in sorted(entries)]
