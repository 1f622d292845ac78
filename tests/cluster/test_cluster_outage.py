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
    assert not outage.exceeded(11.0) and outage.exceeded(11.5)
    assert "run the same command again" in outage.error_text() and "\n" not in outage.error_text()
    back = outage.succeeded(4.5)
    assert back is not None and "3.5 s" in back and not outage.down and not outage.exceeded(100.0)
    assert outage.succeeded(5.0) is None
    assert outage.as_dict() == {"outages": 1, "longest_s": 3.5}


async def test_after_an_outage_missing_nodes_get_the_startup_grace() -> None:
    clock = FakeClock()
    coord = InProcessHub(8, clock).coordinator()
    recovered: list[str] = []

    async def recover(node: str, buckets: tuple[int, ...]) -> bool:
        recovered.append(node)
        return True

    async def scan() -> int:
        return 0

    duty = Coordinating(coord, 8, clock, grace_s=1.0, recover=recover, scan_pending=scan, startup_grace_s=10.0)
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
