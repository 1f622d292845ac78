"""Items waiting for the time of their retry, apart from their host's queue. Pure.

A retried item that went back to the head of its host's queue at once would
hold the whole host until its own retry time: one URL answering 500 would
stall every other URL of the host (and the host's error streak would grow with
each retry of that one URL, never reset by the others' successes). So
:meth:`Frontier.retry <webgather.frontier.frontier.Frontier.retry>` parks the
item here, still *in flight* for the queues (a crash fetches it again, like any
item in flight), and puts it back into its host's queue once it is due.

An item is due at its own retry time, but not before its host's next request
is over (the host's next allowed time plus its delay: ``turn_after_next``):
when the two times coincide (a URL's first retry and the host's first back-off
step are both ``backoff_base_s``), the host's next request goes to another of
its URLs, whose success ends the host's error streak, and the failing URL
comes after it. Otherwise the retry, back at the head of the queue, would take
every slot of the host until it gave up, escalating the host's back-off with
each attempt. (A margin of a millisecond was not enough: a timer that fires a
little late finds both due, and the retry sorts first.)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

from webgather.frontier.model import CrawlItem

__all__ = ["Parked"]


class Parked:
    """A heap of ``(due, seq, host, item)``: parked retries by the time they may go.

    ``requeue(host, item, now)`` puts a released item back into its host's queue.
    """

    def __init__(self, requeue: Callable[[str, CrawlItem, float], None]) -> None:
        self._requeue = requeue
        self._heap: list[tuple[float, int, str, CrawlItem]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def park(self, due: float, host: str, item: CrawlItem) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, host, item))

    def due_at(self) -> float:
        """When the next parked item is due; ``math.inf`` when none is parked."""
        return self._heap[0][0] if self._heap else math.inf

    def release_due(self, now: float) -> None:
        """Requeue every item due by ``now``, earliest first."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, host, item = heapq.heappop(heap)
            self._requeue(host, item, now)

    def release_host(self, host: str, now: float) -> int:
        """Requeue the host's parked items now, due or not; returns how many. For a bucket
        hand-over: the host's clock goes with the bucket, these items' own waits do not,
        and an item parked for a long Retry-After must not hold the hand-over that long."""
        mine = [entry for entry in self._heap if entry[2] == host]
        if mine:
            self._heap = [entry for entry in self._heap if entry[2] != host]
            heapq.heapify(self._heap)
            for _, _, _, item in mine:
                self._requeue(host, item, now)
        return len(mine)
