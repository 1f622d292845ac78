"""The wake-up between a node's beat and lease loops: it cuts an idle wait short, a bounded number of times."""

from __future__ import annotations

import asyncio
import time

from webgather.runtime.member.nudge import Nudge


async def test_a_nudge_ends_the_wait_at_once_and_a_wait_without_one_runs_its_course() -> None:
    nudge = Nudge()
    started = time.monotonic()
    assert await nudge.wait(0.05) is False
    assert time.monotonic() - started >= 0.04
    nudge.set()
    started = time.monotonic()
    assert await nudge.wait(5.0) is True
    assert time.monotonic() - started < 1.0
    later = asyncio.get_running_loop().call_later(0.02, nudge.set)  # set while waiting
    assert await nudge.wait(5.0) is True
    later.cancel()


async def test_nudges_in_a_row_are_bounded_then_a_whole_wait_runs_and_the_count_starts_again() -> None:
    nudge = Nudge(max_in_row=3)
    for _ in range(3):
        nudge.set()
        assert await nudge.wait(5.0) is True
    nudge.set()
    started = time.monotonic()
    assert await nudge.wait(0.05) is False, "a fourth nudge in a row must not cut the wait short"
    assert time.monotonic() - started >= 0.04
    nudge.set()
    assert await nudge.wait(5.0) is True  # the count started again after the whole wait
