"""A shared store whose failures a cluster node counts, so an unusable store is an outage with a limit.

A store that fills up or turns read-only fails every put while reads may still
work; a node that only retried would wait forever (a hand-off shipping its WARC
files first, or an idle node whose acks wait for a checkpoint, so the crawl's end
never comes). :class:`WatchedStore` passes every call on and reports:

* ``failed(reason)`` on any :class:`~webgather.errors.StoreError` (the node's
  :class:`~webgather.cluster.outage.Outage` for the store logs one line and,
  past ``max_outage_s`` from the last write that worked, stops the node with
  exit 6);
* ``wrote()`` after a write (put or delete) that worked: only a write ends an
  outage, since a store that answers reads but refuses writes is still unusable.

Once the node gave up (``gave_up()`` true) a failing call raises
:class:`~webgather.errors.CannotContinue` with the node's one line instead of the
StoreError, so the last shipping at the node's end says the same as its stop.
Blocking, as the store it wraps (the node calls it from a worker thread); the
callbacks must be thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from webgather.errors import CannotContinue, StoreError
from webgather.store.shared import SharedStore

__all__ = ["WatchedStore"]


class WatchedStore:
    """``store`` with its failures and successful writes reported (module docstring)."""

    def __init__(self, store: SharedStore, *, failed: Callable[[str], None], wrote: Callable[[], None],
                 gave_up: Callable[[], str | None]) -> None:
        self.store = store
        self.url = store.url
        self._failed, self._wrote, self._gave_up = failed, wrote, gave_up

    @contextmanager
    def _watch(self, write: bool) -> Iterator[None]:
        try:
            yield
        except StoreError as exc:
            self._failed(str(exc))
            line = self._gave_up()
            if line is not None:
                raise CannotContinue(line) from None
            raise
        if write:
            self._wrote()

    def put_file(self, local: Path, key: str) -> None:
        with self._watch(True):
            self.store.put_file(local, key)

    def put_bytes(self, key: str, data: bytes) -> None:
        with self._watch(True):
            self.store.put_bytes(key, data)

    def get_bytes(self, key: str) -> bytes | None:
        with self._watch(False):
            return self.store.get_bytes(key)

    def list(self, prefix: str = "") -> list[str]:
        with self._watch(False):
            return self.store.list(prefix)

    def exists(self, key: str) -> bool:
        with self._watch(False):
            return self.store.exists(key)

    def delete(self, key: str) -> None:
        with self._watch(True):
            self.store.delete(key)
