"""The jobs the event loop hands to the archive writer's thread (:mod:`.writer`), and its counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from webgather.fetch.model import FetchResult
from webgather.store.linklog import Link
from webgather.store.records import RevisitProfile
from webgather.store.warc import ArchiveRef

__all__ = ["Job", "RefCallback", "WriterStats", "copy_links"]

RefCallback = Callable[[ArchiveRef | None], None]
"""Called on the writer thread with the record's ref (None: nothing archived).
Not called if the write fails (the error comes back from the next call):
asyncio code that waits for the ref should use :meth:`ArchiveWriter.write`."""


@dataclass(frozen=True, slots=True)
class WriterStats:
    responses: int
    revisits: int
    log_entries: int
    pages_with_links: int
    full_queue_waits: int
    """Times a submit found the queue full and had to block (backpressure)."""


@dataclass(slots=True)
class Job:
    kind: str
    result: FetchResult | None = None
    entry: dict[str, Any] | None = None
    links: Sequence[Link] | None = None
    on_ref: RefCallback | None = None
    original: ArchiveRef | None = None
    profile: RevisitProfile = "server-not-modified"
    done: Future[Any] | None = None
    """Settled when the job is done: None for a flush, the ArchiveRef (or None) for a fetch."""
    rendered: bytes | None = None
    """A fetch's DOM rendered in a browser: archived as a ``conversion`` record beside the response."""


def copy_links(links: Sequence[Link] | None) -> Sequence[Link] | None:
    """The caller may reuse its list once submit returns."""
    return None if links is None else tuple(links)
