"""runtime.engine.affinity: a node's threads on one CPU, the mask restored after."""

from __future__ import annotations

import os
import threading

import pytest

from webgather.runtime.engine.affinity import pinned

ALLOWED = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
needs_two = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two allowed CPUs")


@needs_two
def test_a_cpu_index_pins_this_thread_and_threads_it_starts_then_the_mask_comes_back() -> None:
    seen: list[set[int]] = []
    with pinned(str(len(ALLOWED) + 1)) as cpu:  # modulo the allowed count
        assert cpu == ALLOWED[1 % len(ALLOWED)]
        assert os.sched_getaffinity(0) == {cpu}
        worker = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        worker.start()
        worker.join()
        with pinned("auto") as nested:  # already on one CPU: nothing to choose, nothing changed
            assert nested is None and os.sched_getaffinity(0) == {cpu}
    assert seen == [{cpu}]
    assert sorted(os.sched_getaffinity(0)) == ALLOWED


@needs_two
def test_auto_picks_an_allowed_cpu_and_off_pins_nothing() -> None:
    with pinned("auto") as cpu:
        assert cpu in ALLOWED and os.sched_getaffinity(0) == {cpu}
    with pinned("off") as none:
        assert none is None and sorted(os.sched_getaffinity(0)) == ALLOWED


def test_the_setting_is_checked_and_read_from_cli_and_environment() -> None:
    from webgather.config import load
    from webgather.errors import ConfigError

    assert load(None, {}, {}).pin_cpu == "auto"
    assert load(None, {"WEBGATHER_PIN_CPU": "off"}, {}).pin_cpu == "off"
    assert load(None, {}, {"pin_cpu": "0"}).pin_cpu == "0"  # an index past the allowed CPUs: test_cli_ranges
    with pytest.raises(ConfigError, match="pin_cpu"):
        load(None, {}, {"pin_cpu": "fast"})
