"""A SIGTERM that came before a node handled its own, kept until the node's handling starts.

The command line's entry (:mod:`webgather._entry`) turns an early SIGTERM into an interruption: the
asyncio runner cancels the command's main task. That cancellation can be lost: Python 3.11's
``asyncio.wait_for`` returns its result and drops a cancellation that lands just as its inner awaitable
completes, and redis-py sends every command through ``wait_for`` (a socket timeout). A SIGTERM during a
node's connection to Redis was so lost at some instants: the node crawled on, never saying it was
leaving, until it was killed (nemesis file seed 42: SIGTERM 0.9 s after the start). The entry notes
each SIGTERM here; the node's own handling (:class:`~webgather.runtime.engine.signals.NodeSignals`)
takes the note as it starts and hands it to the node (a graceful leave). An interruption that was not
lost ends the command before that, and the note with it.

Its own module, importing nothing: the entry notes a SIGTERM before any of the CLI's imports.
"""

from __future__ import annotations

__all__ = ["note", "take"]

_seen = False


def note() -> None:
    """A SIGTERM came while the entry's handling held it."""
    global _seen
    _seen = True


def take() -> bool:
    """Whether a SIGTERM came since the last call (then forgotten: it is handed on once)."""
    global _seen
    seen, _seen = _seen, False
    return seen
