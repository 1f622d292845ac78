"""Keeping a busy node's membership lease alive from a thread of its own (Redis backend).

Why: a node's lease is renewed by its beat loop, a coroutine on the same event
loop as its fetches. Each beat is about six Redis round trips, and under load
each round trip waits a whole turn of a loop that is busy parsing pages (256
fetches in flight): measured with ``--workers 2`` on the shared 2-core machine,
beats took 1.9 s (median) to 3.8 s, the lease (``member_ttl_s - lease_margin_s``
= 4.75 s from the send of the heartbeat it confirms) lapsed 17 times a minute
per node and each node's fetches stood still 21 % of the crawl. A node that is
merely busy is alive, and its owner's fetches must go on.

:class:`KeepAlive` runs one thread per node that, every ``period_s``, sends
``PEXPIRE m:<node>`` and ``HGET table version`` in one pipeline on a blocking
connection of its own (Redis runs them in that order) and, if the member key
still existed and the table's version is the one the node has adopted, reports
the renewal's send time through ``kept``: the same rule as the loop's beat (a
heartbeat that succeeded, then a table read sent after it that matches the
node's table; ``runtime.member.fence``). It never writes the member info, which
stays the loop's (idle flags, load figures); it only keeps the key from expiring.
The GIL hands the thread a turn within the interpreter's switch interval
(5 ms), whatever the loop is doing.

What it does not hide: a stopped process (SIGSTOP, a frozen VM) stops the thread
too; and a loop that has not completed a beat for ``stall_s`` is taken as hung,
not busy: the thread stops renewing, the lease lapses and the others recover the
node's buckets as before. Redis errors are not reported here (the loop's own
calls report an outage); the thread tries again next period.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis
import redis.exceptions as rex

from webgather.cluster._redis_keys import Keys

__all__ = ["LOOP_STALL_S", "KeepAlive", "redis_renewer"]
log = logging.getLogger(__name__)

LOOP_STALL_S = 30.0
"""A loop whose last completed beat is older than this is hung, not busy: the thread stops renewing."""

Renew = Callable[[], "int | None"]
"""Extend the member key's TTL and read the table version; None if the key is gone or Redis failed."""


def redis_renewer(url: str, crawl: str, node: str, ttl_s: float,
                  socket_timeout_s: float = 2.0) -> tuple[Renew, Callable[[], None]]:
    """A :data:`Renew` over a blocking client of ``url`` of its own, and the function that closes it."""
    keys = Keys(crawl)
    client = redis.Redis.from_url(url, protocol=2, socket_timeout=socket_timeout_s,
                                  socket_connect_timeout=socket_timeout_s)
    member, ttl_ms = keys.member_prefix + node, max(1, round(ttl_s * 1000))

    def renew() -> int | None:
        try:
            with client.pipeline(transaction=False) as pipe:
                pipe.pexpire(member, ttl_ms)
                pipe.hget(keys.table, "version")
                extended, version = pipe.execute()
        except (rex.RedisError, OSError) as exc:
            log.debug("keepalive of node %s: %s", node, exc)
            return None
        return int(version) if extended and version is not None else None

    return renew, client.close


class KeepAlive:
    """The renewal thread (module docstring). ``adopted()``: the node's table version; ``loop_beat_at()``:
    monotonic time of the loop's last completed beat; ``kept(sent_at)``: a renewal sent at ``sent_at``
    succeeded and matched the node's table (called from the thread: it must be thread-safe)."""

    def __init__(self, renew: Renew, *, period_s: float, adopted: Callable[[], int | None],
                 loop_beat_at: Callable[[], float], kept: Callable[[float], None],
                 monotonic: Callable[[], float] = time.monotonic, stall_s: float = LOOP_STALL_S,
                 close: Callable[[], None] = lambda: None) -> None:
        self.renew, self.period_s, self.adopted = renew, period_s, adopted
        self.loop_beat_at, self.kept, self.monotonic, self.stall_s = loop_beat_at, kept, monotonic, stall_s
        self.close = close
        self.renewals = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> bool:
        """One renewal attempt; True if it renewed the lease."""
        sent_at = self.monotonic()
        if sent_at - self.loop_beat_at() > self.stall_s:
            return False
        version = self.renew()
        if version is None or version != self.adopted():
            return False  # a newer table: the loop adopts it and confirms the lease itself
        self.kept(sent_at)
        self.renewals += 1
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="webgather-keepalive", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the thread (within one Redis timeout) and close its connection."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.close()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            self.tick()
