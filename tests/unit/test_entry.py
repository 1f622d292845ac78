"""The command line's entry (``webgather._entry``): SIGTERM at any instant ends with a code from the table.

A SIGTERM that landed in the entry's own import of the exit-code table, or after the command had
returned, escaped as a KeyboardInterrupt traceback and the process died by SIGINT (exit -2), seen in
the early-SIGTERM cluster test under load.
"""

from __future__ import annotations

import subprocess
import sys

from webgather._entry import INTERRUPTED
from webgather.exitcodes import ExitCode


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)


def test_the_entry_agrees_with_the_exit_table() -> None:
    assert INTERRUPTED == ExitCode.INTERRUPTED


def test_an_interruption_before_the_cli_runs_is_one_line_and_130() -> None:
    done = _run("import webgather.cli as cli, webgather._entry as entry\n"
                "def run():\n    raise KeyboardInterrupt\n"
                "cli.main = run\nentry.main()")
    assert done.returncode == ExitCode.INTERRUPTED, done.stderr
    assert done.stderr == "webgather: interrupted\n"


def test_a_sigterm_after_the_command_returned_ends_with_its_code() -> None:
    done = _run("import os, signal, time, webgather.cli as cli, webgather._entry as entry\n"
                "cli.main = lambda: 3\ncode = entry.main()\n"
                "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(5)\nraise SystemExit(99)")
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
