"""Signal handling of a running crawl, in one place: SIGTERM and SIGINT to the node's callbacks.

A one-node crawl and a cluster node alike: SIGTERM leaves (a cluster node hands
its buckets over first; the last or only node just stops), SIGINT stops at once
keeping the state, so the same command resumes. Outside the main thread (a
test driving a crawl) nothing is installed: the caller stops the node itself.

:class:`NodeSignals` covers a node's whole run, not only its crawl loop: a signal
that arrives while the node opens its state (seconds on a large frontier) is kept
and handed to the node as it starts, and one that arrives after its crawl ended
is absorbed while it writes its summary. Without that, a SIGTERM in either gap
killed the process (exit -15, a summary half written), which a rolling restart
of a cluster hits every time. A SIGTERM that came before, while the command line's
entry held it, and whose interruption was lost (:mod:`webgather._term_seen`), is
handed to the node the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator
from typing import Any

from webgather import _term_seen

__all__ = ["NodeSignals", "crawl_signals"]

log = logging.getLogger(__name__)


@contextlib.contextmanager
def crawl_signals(on_term: Callable[[], object], on_int: Callable[[], object]) -> Iterator[None]:
    """SIGTERM -> ``on_term``, SIGINT -> ``on_int`` on the running loop while the block runs; then the
    handlers from before it (the loop's removal alone leaves SIGTERM's default, death by the signal,
    where the command line's entry had made it an interruption: :mod:`webgather._entry`)."""
    loop = asyncio.get_running_loop()
    installed: dict[signal.Signals, Any] = {}
    for sig, handler in ((signal.SIGTERM, on_term), (signal.SIGINT, on_int)):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            before = signal.getsignal(sig)
            loop.add_signal_handler(sig, handler)
            installed[sig] = before
    try:
        yield
    finally:
        for sig, before in installed.items():
            loop.remove_signal_handler(sig)
            if before is not None:  # None: a handler not set from Python, which removal cannot restore either
                signal.signal(sig, before)


class NodeSignals:
    """SIGTERM and SIGINT for one node's whole run (module docstring): :meth:`installed` around the run,
    :meth:`attach` once the node exists, :meth:`detach` once its crawl ended."""

    def __init__(self) -> None:
        self._handlers: tuple[Callable[[], object], Callable[[], object]] | None = None
        self._pending: list[int] = []
        self._ended = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        with crawl_signals(lambda: self._got(0), lambda: self._got(1)):
            if _term_seen.take():  # the entry's interruption was lost (webgather._term_seen): handled here
                self._got(0)
            yield

    def attach(self, on_term: Callable[[], object], on_int: Callable[[], object]) -> None:
        """From now on signals go to the node; those that came while it started are delivered now."""
        self._handlers = (on_term, on_int)
        pending, self._pending = self._pending, []
        for which in pending:
            self._handlers[which]()

    def detach(self) -> None:
        """The node's crawl ended: later signals are absorbed while it writes its summary."""
        self._handlers, self._ended = None, True

    def _got(self, which: int) -> None:
        name = ("SIGTERM", "SIGINT")[which]
        if self._handlers is not None:
            self._handlers[which]()
        elif self._ended:
            log.info("%s after the crawl ended: the node finishes writing its summary", name)
        else:
            log.info("%s while the node starts: it is handled as soon as the node runs", name)
            self._pending.append(which)
