"""A node whose clock runs slow: its lease must be judged in the server's time, not in its own.

Three node processes with separate --out directories, one Redis and a ``file://`` shared store
(``durability_helpers``); node b runs under libfaketime at half speed (its monotonic clock, its
timers and its wall clock all run at 0.5x), is frozen (SIGSTOP) for 4.5 s and thawed. Its membership
key (3 s, in Redis's time) expired meanwhile and the others recovered its buckets from its checkpoints;
by its own clock only 2.25 s passed, under its local lease of 3 - 0.25 s. Politeness is measured from
the test server's own records (real time): no two requests to one host at once or under the delay.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from durability_helpers import run_scenario

LIBFAKETIME = next((p for p in ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                                "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                                "/usr/lib/faketime/libfaketime.so.1") if os.path.exists(p)), None)


@pytest.mark.skipif(LIBFAKETIME is None, reason="libfaketime (Debian package faketime) is not installed")
async def test_a_node_whose_clock_runs_at_half_speed_sends_nothing_after_its_lease_lapsed_in_redis(
        tmp_path: Path) -> None:
    """Before: after the thaw b's lease was still "valid" by its slowed clock and it sent requests to
    hosts the others had taken, closer than the delay to their requests (measured 13-16 per thaw in a
    4-node crawl). Now each request first asks Redis whether b's key lives (``ServerCheck``): it does
    not, so b waits for a renewed lease and the table that took its buckets, and sends none."""
    assert LIBFAKETIME is not None
    env = {**os.environ, "LD_PRELOAD": LIBFAKETIME, "FAKETIME": "+0 x0.5", "FAKETIME_DONT_RESET": "1"}
    outcome = await run_scenario(tmp_path, (tmp_path / "shared").as_uri(), fault="stop", pause_s=4.5,
                                 member_ttl_s=3.0, kill_after_pages=15, victim_env=env, min_delay_s=0.3,
                                 mean_pages_per_host=30.0)
    print(outcome.row(), outcome.exit_codes, outcome.politeness_examples, outcome.summaries.get("b", {}).get("fence"))
    assert (outcome.at_once, outcome.short_gaps) == (0, 0), outcome.politeness_examples
    assert outcome.missing == [], outcome.row()
    fence = outcome.summaries["b"]["fence"]
    assert fence["server_refused"] > 0, fence  # the server's time said no where b's clock said yes

