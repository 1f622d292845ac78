"""A node's first steps with Redis (connect, join or start the crawl) wait through a short outage."""

from __future__ import annotations

import pytest

from webgather.cluster.patience import within_outage
from webgather.errors import BackendBusy, BackendUnavailable, CannotContinue


async def test_a_step_that_fails_for_less_than_max_outage_s_is_retried_with_two_lines(
        caplog: pytest.LogCaptureFixture) -> None:
    tries: list[int] = []

    async def step() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise BackendUnavailable("cannot reach Redis at redis://127.0.0.1:1: refused")
        return "joined"

    assert await within_outage(step, node="n1", max_outage_s=5.0, poll_s=0.01) == "joined"
    lines = [r.getMessage() for r in caplog.records]
    assert len(tries) == 3 and len(lines) == 2
    assert "pausing and retrying for up to 5 s" in lines[0] and "back after" in lines[1]


async def test_past_max_outage_s_the_node_cannot_continue() -> None:
    async def step() -> str:
        raise BackendUnavailable("cannot reach Redis at redis://127.0.0.1:1: refused")

    with pytest.raises(CannotContinue, match="unavailable for more than 0.05 s"):
        await within_outage(step, node="n1", max_outage_s=0.05, poll_s=0.01)


async def test_a_busy_pool_is_not_waited_for() -> None:
    tries: list[int] = []

    async def step() -> str:
        tries.append(1)
        raise BackendBusy("all connections in use")

    with pytest.raises(BackendBusy):
        await within_outage(step, node="n1", max_outage_s=5.0, poll_s=0.01)
    assert tries == [1]
