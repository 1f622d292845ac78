"""Nothing silent: what a cluster crawl could not recover is told by every node, and fails the exit code.

Two crawl-wide counters in the coordinator name buckets whose state is gone or
incomplete: ``unrecoverable_buckets`` (a dead node's directory missing and no
shared store, or a checkpoint it listed unreadable: its queued URLs, seen set
and host clocks are lost, ``runtime.durability.recovery``, ``runtime.durability.restore``;
a node that died before its first checkpoint is no loss, its streams hold
everything it had) and ``buckets_started_empty`` (without a shared store, a
bucket taken from a dead node whose state did not arrive within
``handoff_timeout_s`` and is not in the bucket's stream either, un-acked or
never read: ``BucketKeeper.release_overdue``; a late hand-off is still merged.
With a store such a bucket is restored from the node's checkpoints and streams,
never started empty). Every node reads the counters at every beat and
logs one ERROR line when they grow (:class:`Losses`); the node's summary
and ``webgather cluster status`` show them, and the node, ``crawl --redis`` and
``crawl --workers`` exit with :data:`EXIT_DATA_LOST` instead of 0 when the crawl
finished with losses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from webgather.cluster.transport import Coordinator
from webgather.exitcodes import ExitCode

__all__ = ["EXIT_DATA_LOST", "LOSS_COUNTERS", "Losses", "loss_text", "release_overdue"]

EXIT_DATA_LOST = ExitCode.DATA_LOST
"""Exit code of a cluster crawl (node or parent) that ended with buckets it could not recover."""
LOSS_COUNTERS = ("unrecoverable_buckets", "buckets_started_empty")


def loss_text(counters: Mapping[str, Any]) -> str:
    """``""`` when nothing was lost; else what and how much, in one line."""
    found = {name: int(counters.get(name, 0) or 0) for name in LOSS_COUNTERS}
    if not any(found.values()):
        return ""
    return ("DATA LOST: " + ", ".join(f"{name} {n}" for name, n in found.items() if n)
            + " (buckets whose state could not be recovered after a node died: their queued URLs are not"
            " crawled unless found again, and pages fetched before may be fetched twice)")


class Losses:
    """This node's view of the crawl-wide loss counters (module docstring)."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.counts: dict[str, int] = {}

    def seen(self, counters: Mapping[str, Any]) -> str | None:
        """Counters read at a beat: the line to print if the losses grew, else None."""
        now = {name: int(counters.get(name, 0) or 0) for name in LOSS_COUNTERS}
        if sum(now.values()) <= sum(self.counts.values()):
            return None
        self.counts = now
        return f"webgather node {self.node}: {loss_text(now)}"

    def any(self) -> bool:
        return any(self.counts.values())

    def as_dict(self) -> dict[str, int]:
        return {name: n for name, n in self.counts.items() if n}


class OverdueReleaser(Protocol):
    """The bucket keeper's side of a hand-off timeout (structural, so durability does not import the member)."""

    @property
    def counts(self) -> Mapping[str, int]: ...

    async def release_overdue(self, buckets: Iterable[int]) -> None: ...


async def release_overdue(keeper: OverdueReleaser, coordinator: Coordinator, buckets: Iterable[int]) -> None:
    """Start the overdue buckets empty and count them crawl-wide."""
    before = keeper.counts["handoff_timeouts"]
    await keeper.release_overdue(buckets)
    if keeper.counts["handoff_timeouts"] > before:
        await coordinator.incr("buckets_started_empty", keeper.counts["handoff_timeouts"] - before)
