"""Signal handling of a running crawl, in one place: SIGTERM and SIGINT to the node's callbacks.

A one-node crawl and a cluster node alike: SIGTERM leaves (a cluster node hands
its buckets over first; the last or only node just stops), SIGINT stops at once
keeping the state, so the same command resumes. Outside the main thread (a
test driving a crawl) nothing is installed: the caller stops the node itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator

__all__ = ["crawl_signals"]


@contextlib.contextmanager
def crawl_signals(on_term: Callable[[], object], on_int: Callable[[], object]) -> Iterator[None]:
    """SIGTERM -> ``on_term``, SIGINT -> ``on_int`` on the running loop while the block runs."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig, handler in ((signal.SIGTERM, on_term), (signal.SIGINT, on_int)):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(sig, handler)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
