"""A ``webgather`` command in a forked child (runtime.launch.forked): its output in the log given, its exit
code, none of the parent's exit handlers, and a fork only from a process with one thread."""

from __future__ import annotations

import atexit
import threading
from pathlib import Path

from webgather.runtime.launch.forked import ForkedCommand, can_fork


def test_the_child_runs_the_command_into_its_log_and_exits_with_its_code(tmp_path: Path) -> None:
    with (tmp_path / "node.log").open("ab") as log:
        child = ForkedCommand(["node", "--crawl", "c", "--out", str(tmp_path / "out")], log,
                              {"WEBGATHER_REDIS_URL": ""}, "wg-t0")
        assert child.wait() == 2  # usage: no Redis URL, as `webgather node` run by itself says
    assert "node needs the crawl's Redis" in (tmp_path / "node.log").read_text()
    assert child.poll() == 2


def test_the_parents_exit_handlers_do_not_run_in_the_child(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def handler() -> None:
        marker.write_text("ran")

    atexit.register(handler)
    try:
        with (tmp_path / "node.log").open("ab") as log:
            child = ForkedCommand(["--version"], log, {}, "wg-t1")
            code = child.wait()
    finally:
        atexit.unregister(handler)
    assert code == 0, (tmp_path / "node.log").read_text()
    assert not marker.exists()


def test_no_fork_from_a_process_with_another_thread() -> None:
    answers: list[bool] = []
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        answers.append(can_fork())
    finally:
        stop.set()
        other.join()
    from_thread = threading.Thread(target=lambda: answers.append(can_fork()))
    from_thread.start()
    from_thread.join()
    assert answers == [False, False]
