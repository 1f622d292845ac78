"""The command line's entry (``webgather._entry``): SIGTERM at any instant ends with a code from the table.

A SIGTERM that landed in the entry's own import of the exit-code table, or after the command had
returned, escaped as a KeyboardInterrupt traceback and the process died by SIGINT (exit -2), seen in
the early-SIGTERM cluster test under load.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from webgather._entry import INTERRUPTED
from webgather.exitcodes import ExitCode


def _run(script: str, *, sigint_ignored: bool = False) -> subprocess.CompletedProcess[str]:
    """``script`` in a new interpreter (``sigint_ignored``: as a shell starts a background job)."""
    def ignore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False,
                          preexec_fn=ignore if sigint_ignored else None)


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


@pytest.mark.parametrize("sigint_ignored", [False, True])
def test_a_sigterm_while_an_asyncio_loop_runs_ends_it_without_a_traceback(sigint_ignored: bool) -> None:
    """Raised as a bare KeyboardInterrupt, it landed in a transport's read callback, which uvloop logged
    as a fatal error with a traceback (a nemesis schedule: SIGTERM to a node connecting to Redis)."""
    done = _run("import asyncio, os, signal, threading, time, uvloop, webgather.cli as cli, webgather._entry as entry\n"
                "class Busy(asyncio.Protocol):\n"
                "    def data_received(self, data):\n"
                "        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()\n"
                "        end = time.monotonic() + 1.0\n"
                "        while time.monotonic() < end:\n"
                "            pass\n"
                "async def crawl():\n"
                "    loop = asyncio.get_running_loop()\n"
                "    server = await asyncio.start_server(lambda r, w: w.write(b'x'), '127.0.0.1', 0)\n"
                "    port = server.sockets[0].getsockname()[1]\n"
                "    try:\n"
                "        await loop.create_connection(Busy, '127.0.0.1', port)\n"
                "        await asyncio.sleep(30)\n"
                "    except asyncio.CancelledError:\n"
                "        print('cancelled', flush=True)\n"
                "        raise\n"
                "cli.main = lambda: uvloop.run(crawl())\nentry.main()", sigint_ignored=sigint_ignored)
    assert done.returncode == ExitCode.INTERRUPTED, done.stderr
    assert done.stdout == "cancelled\n" and done.stderr == "webgather: interrupted\n"


def test_a_sigterm_whose_interruption_asyncio_lost_still_reaches_the_node() -> None:
    """Python 3.11's ``asyncio.wait_for`` drops a cancellation that lands as its inner awaitable completes
    (redis-py sends every command through it). Here the SIGTERM lands exactly then, during a callback the
    inner awaitable scheduled; the interruption is lost and the command goes on to start its node, whose
    signal handling must still see the SIGTERM (a graceful leave). Before: the node never heard of it
    (nemesis file seed 42: a node told to leave 0.9 s after its start crawled on until it was killed)."""
    done = _run("import asyncio, os, signal, time, uvloop, webgather.cli as cli, webgather._entry as entry\n"
                "from webgather.runtime.engine.signals import NodeSignals\n"
                "def busy():\n"
                "    os.kill(os.getpid(), signal.SIGTERM)\n"
                "    time.sleep(0.2)\n"
                "async def command_of_redis():\n"
                "    asyncio.get_running_loop().call_soon(busy)\n"
                "async def crawl():\n"
                "    await asyncio.wait_for(command_of_redis(), 5)\n"
                "    print('interruption lost', flush=True)\n"
                "    signals, left = NodeSignals(), []\n"
                "    with signals.installed():\n"
                "        signals.attach(lambda: left.append('term'), lambda: left.append('int'))\n"
                "        await asyncio.sleep(0.1)\n"
                "    print('node told:', left, flush=True)\n"
                "    return 0\n"
                "cli.main = lambda: uvloop.run(crawl())\nraise SystemExit(entry.main())")
    assert "Traceback" not in done.stderr, done.stderr
    if "interruption lost" in done.stdout:  # Python 3.11: the node must hear the SIGTERM
        assert "node told: ['term']" in done.stdout, done.stdout
        assert done.returncode == 0, done.stderr
    else:  # a Python whose wait_for keeps the cancellation: interrupted as any early SIGTERM
        assert done.returncode == ExitCode.INTERRUPTED, done.stderr
