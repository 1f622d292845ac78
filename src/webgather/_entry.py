"""The command line's entry point: SIGTERM handled from the process's first instants, then the CLI.

Importing the CLI takes about half a second (the config, the parser core, numpy), and a node then
connects to Redis and reads its crawl before its own signal handling begins
(:class:`~webgather.runtime.engine.signals.NodeSignals`). A SIGTERM in that gap killed the process
(exit -15, outside :mod:`webgather.exitcodes`): a rolling restart, or a supervisor stopping a node
that had just started, met it. So the first thing the process does is treat SIGTERM as Ctrl-C (through
SIGINT's handler of the moment, which an asyncio runner replaces by one that cancels its main task):
:exc:`KeyboardInterrupt`, which the CLI turns into one line and INTERRUPTED (130), nothing having
been kept or lost yet. Once a command installs its own handling (a crawl's: leave gracefully), that
takes over, and puts this one back when it ends. ``import webgather`` loads nothing heavy, so the gap
left is the interpreter's own start-up.

An interrupted process ends with ``os._exit`` once the exit handlers ran: CPython 3.11 marks a
``KeyboardInterrupt`` that passed through ``exec`` of a string (a dataclass being created, say) as
unhandled even when it was caught, and would then end the process by SIGINT (exit -2), not 130.

The console script (:func:`run`) ends every command that way: by then the command has closed what
it wrote (its summary is the last file), and the interpreter's own teardown (freeing some 570
modules and the crawl's objects) only added to the time a crawl takes beyond its last page: about
0.1 s measured at load 4.5 (``import`` of the crawl's modules then exit: 570 ms median of six,
against 480 ms with ``os._exit``).
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, NoReturn

from webgather import _term_seen

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["INTERRUPTED", "main", "run"]

INTERRUPTED = 130
"""``webgather.exitcodes.ExitCode.INTERRUPTED``, kept here so no import stands before the handler's
first use (a unit test checks that the two agree)."""

def main() -> int:
    """The command line: the command's exit code (:func:`run` ends the process with it)."""
    signal.signal(signal.SIGTERM, _as_sigint)
    try:  # every import inside: a SIGTERM may land in any of them
        from webgather.cli import main as run

        code = int(run())
    except KeyboardInterrupt:  # before the CLI's own handling: in its imports, or parsing the command line
        print("webgather: interrupted", file=sys.stderr)
        code = INTERRUPTED
    # the command is over: a SIGTERM now ends the process at once with the command's own code
    signal.signal(signal.SIGTERM, lambda _signum, _frame: _exit(code))
    if code == INTERRUPTED:
        _exit(code)
    return code


def run() -> NoReturn:
    """``webgather``'s console script and ``python -m webgather``: :func:`main`, then end the process
    with its code, after the exit handlers and stdio's flush, without the interpreter's teardown."""
    code = main()
    import threading

    # as the interpreter's exit begins: the executors' workers finish their work, other threads are joined
    threading._shutdown()  # type: ignore[attr-defined]
    _exit(code)


def _as_sigint(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as Ctrl-C. While an asyncio runner runs the command's loop, through its SIGINT handler,
    which cancels the main task; on another running loop (or when SIGINT is ignored, as a shell does
    for a background job, so no runner took it over), raised from a callback of its own. Raised where
    the signal lands, a KeyboardInterrupt inside the loop's own callbacks (a transport's read, say) is
    logged by uvloop as a fatal error with a traceback. Before any loop runs, raised where the process is.
    Noted first (:mod:`webgather._term_seen`): the runner's cancellation can be lost, the note cannot."""
    _term_seen.note()
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler not in (_as_sigint, signal.default_int_handler):
        handler(signal.SIGINT, frame)
        return
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            loop.call_soon_threadsafe(_interrupt)
            return
    raise KeyboardInterrupt


def _interrupt() -> None:
    raise KeyboardInterrupt


def _exit(code: int) -> NoReturn:
    """End now with ``code``, after the exit handlers (logging's flush among them) and stdio's flush."""
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)
