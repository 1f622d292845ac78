"""Exit statuses of the command line: a failed write (disk full) is one line and status 3."""

from __future__ import annotations

import argparse

import pytest

import webgather.commands.crawl as crawl_command
from webgather.cli import EXIT_WRITE_FAILED, main
from webgather.errors import CannotContinue, HandoffAbandoned, SeedError, WriteFailed

FULL = "disk full: cannot write crawl log /x/crawl.log.jsonl: No space left on device (ENOSPC)"


@pytest.mark.parametrize("raised", [
    WriteFailed(FULL),
    ExceptionGroup("a cluster node's tasks", [ValueError("not this one"), WriteFailed(FULL)]),
    ExceptionGroup("outer", [ExceptionGroup("inner", [WriteFailed(FULL)])]),
])
def test_a_failed_write_exits_3_with_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                              raised: Exception) -> None:
    def fail(_args: argparse.Namespace) -> int:
        raise raised

    monkeypatch.setattr(crawl_command, "_main", fail)
    assert main(["crawl", "http://a.test/"]) == EXIT_WRITE_FAILED == 3
    assert capsys.readouterr().err == f"webgather: error: {FULL}\n"


@pytest.mark.parametrize("raised", [
    CannotContinue("node n0: shared store unavailable for more than 15 s"),
    ExceptionGroup("a cluster node's tasks", [HandoffAbandoned("node n0: shared store unavailable for more than 15 s")]),
])
def test_a_node_that_cannot_go_on_exits_6_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], raised: Exception) -> None:
    def fail(_args: argparse.Namespace) -> int:
        raise raised

    monkeypatch.setattr(crawl_command, "_main", fail)
    assert main(["crawl", "http://a.test/"]) == 6
    assert capsys.readouterr().err == "webgather: error: node n0: shared store unavailable for more than 15 s\n"


def test_other_errors_keep_their_status(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(_args: argparse.Namespace) -> int:
        raise SeedError("no seeds")

    monkeypatch.setattr(crawl_command, "_main", fail)
    assert main(["crawl"]) == 2

    def group(_args: argparse.Namespace) -> int:
        raise ExceptionGroup("tasks", [ValueError("a bug")])

    monkeypatch.setattr(crawl_command, "_main", group)
    with pytest.raises(ExceptionGroup):
        main(["crawl"])
