"""A ``webgather`` command run in a child forked from this process: a worker that imports nothing.

``crawl --workers N`` runs each node as ``webgather node ...``. Started as a new
interpreter (``python -m webgather node``), each worker spends its first half
second or so of CPU importing the modules its parent has already imported (the
CLI, the crawl's run path, redis-py); on a 2-core machine that is CPU the
crawl's second core was to give it. A child forked from the parent starts with
them loaded and runs the same command line (the module ``webgather`` as
``__main__``, with ``sys.argv`` set, as ``python -m webgather`` does): the same
parsing, signal handling, logging and exit code as the command run by itself.

Forking is only safe from a process with one thread (another thread may hold a
lock the child would wait on forever): :func:`can_fork` says so, and the caller
starts a new interpreter otherwise (the Python API runs the workers from a
thread). The child:

* writes its stdout and stderr to the worker's log (new ``sys.stdout`` and ``sys.stderr`` on them),
  reads stdin from ``/dev/null``;
* gets SIGINT and SIGTERM back as a command's (both blocked across the fork, so the
  parent's handler never runs in it) and the environment given (the Redis URL);
* runs none of the parent's exit handlers (the parent's embedded Redis registers
  one that stops the server): only its own, then ends with ``os._exit``.

A forked worker's ``/proc/PID/cmdline`` is its parent's; its name (``comm``, what
``ps -o comm`` and ``top`` show) is ``wg-<node id>``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import runpy
import signal
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from typing import IO, NoReturn

__all__ = ["ForkedCommand", "can_fork", "preload"]

_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def can_fork() -> bool:
    """May this process fork a worker: a POSIX fork, called from the only thread there is."""
    return (hasattr(os, "fork") and threading.current_thread() is threading.main_thread()
            and threading.active_count() == 1)


def preload() -> None:
    """Import what a node's run imports that the parent has not (so no child imports it again)."""
    import uvloop  # noqa: F401

    import webgather.cluster.keepalive  # noqa: F401
    import webgather.fetch.h1_client  # noqa: F401
    import webgather.runtime.launch.start  # noqa: F401


class ForkedCommand:
    """``webgather ARGS`` in a forked child; what the parent needs of a ``subprocess.Popen``."""

    def __init__(self, args: Sequence[str], log: IO[bytes], env: Mapping[str, str], name: str,
                 close: Sequence[IO[bytes]] = ()) -> None:
        """``close``: files of the parent the child must not keep open (the other workers' logs)."""
        for stream in (sys.stdout, sys.stderr):  # nothing buffered before the fork is written twice
            stream.flush()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        pid = os.fork()
        if pid == 0:
            _child(list(args), log, dict(env), name, close)  # never returns
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            _pid, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:  # not reaped: the pid is still this child's
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _child(args: list[str], log: IO[bytes], env: dict[str, str], name: str, close: Sequence[IO[bytes]]) -> NoReturn:
    code = 1
    try:
        atexit._clear()  # the parent's handlers are the parent's (its embedded Redis's stop among them)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the entry point installs its own at once
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        for other in close:
            os.close(other.fileno())
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        # streams of their own on the new descriptors, as a new interpreter's (the parent's may be other objects)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1,  # noqa: SIM115
                          closefd=False)
        os.environ.update(env)
        _set_name(name)
        sys.argv = ["webgather", *args]
        runpy.run_module("webgather", run_name="__main__", alter_sys=True)  # what `python -m webgather` runs
    except SystemExit as exc:  # how the command ends (webgather/__main__.py raises its exit code)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported in the worker's log, as the interpreter would
        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _set_name(name: str) -> None:
    """The process's name (``/proc/PID/comm``, at most 15 bytes), where there is one to set."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(name[:15])
