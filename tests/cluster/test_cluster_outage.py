"""The node's view of a backend outage (pure), and the coordinator's patience after one."""

from __future__ import annotations

from webgather.cluster.inprocess import InProcessHub
from webgather.cluster.mapping import initial
from webgather.cluster.membership import Coordinating
from webgather.cluster.outage import Outage
from webgather.clock import FakeClock


def test_one_line_when_the_backend_goes_and_one_when_it_is_back() -> None:
    outage = Outage("w0", 10.0)
    assert outage.succeeded(0.0) is None and not outage.down
    first = outage.failed(1.0, "cannot reach Redis at redis://x")
    assert first is not None and "w0" in first and "cannot reach Redis" in first and "10 s" in first
    assert outage.failed(2.0, "again") is None and outage.failed(11.0, "again") is None
    # counted from the last answer (0.0), not from the first failure
    assert not outage.exceeded(10.0) and outage.exceeded(10.5)
    assert "run the same command again" in outage.error_text() and "\n" not in outage.error_text()
    back = outage.succeeded(4.5)
    assert back is not None and "4.5 s" in back and not outage.down and not outage.exceeded(100.0)
    assert outage.succeeded(5.0) is None
    assert outage.as_dict() == {"outages": 1, "longest_s": 4.5}


def test_a_backend_that_answers_nothing_is_an_outage_counted_from_its_last_answer() -> None:
    """A black-holed link fails no call before its socket timeout: silence itself begins the outage."""
    outage = Outage("w0", 5.0, now=0.0)
    assert outage.succeeded(1.0) is None
    assert outage.silent(2.5, quiet_s=2.0) is None  # 1.5 s without an answer: not yet
    line = outage.silent(3.5, quiet_s=2.0)
    assert line is not None and "no answer for 2.5 s" in line and outage.down
    assert outage.silent(4.0, quiet_s=2.0) is None  # one line per outage
    assert not outage.exceeded(6.0) and outage.exceeded(6.5)  # 5 s after the last answer (1.0)
    store = Outage("w0", 5.0, what="shared store", from_last_answer=False)
    assert "shared store unavailable" in (store.failed(1.0, "read-only") or "")
    assert not store.exceeded(6.0) and store.exceeded(6.5)  # a store written rarely: from its first failure
    assert "shared store unavailable for more than 5 s (read-only)" in store.error_text()


async def test_after_an_outage_missing_nodes_get_the_startup_grace() -> None:
    clock = FakeClock()
    hub = InProcessHub(8, clock)
    coord = hub.coordinator()
    recovered: list[str] = []

    async def recover(node: str, buckets: tuple[int, ...]) -> bool:
        recovered.append(node)
        return True

    async def scan() -> int:
        return 0

    duty = Coordinating(coord, 8, clock, grace_s=1.0, recover=recover, requeue=hub.transport("a").requeue,
                        scan_pending=scan, startup_grace_s=10.0)
    await coord.cas_table(None, initial(["a", "b"], 8))
    await coord.heartbeat("a", {}, 100.0)
    await coord.heartbeat("b", {}, 1.0)
    await duty.tick()
    clock.advance(2.0)  # b's heartbeat expired while the backend was away
    duty.backend_returned(clock.monotonic())
    await duty.tick()
    clock.advance(5.0)
    await duty.tick()
    assert recovered == []  # b seen alive before, but the outage restarts its grace
    clock.advance(6.0)
    await duty.tick()
    assert recovered == ["b"]
