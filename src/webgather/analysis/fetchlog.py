"""A crawl log's final fetch entries as arrays. Pure (entries in, arrays out).

Input: crawl-log entries as dicts (docs/contracts.md; read by
:func:`webgather.store.crawllog.read_crawl_log`). Entries with
``"retry": true`` are earlier attempts and are counted, not kept. An entry
whose required fields are missing or of the wrong type is counted in
``bad_entries`` and skipped (one bad line does not stop an analysis).

What counts (the contract's definitions):

* a *fetch* is a final entry of kind ``page`` or ``sitemap`` whose error is
  not ``robots``, ``robots_unavailable`` or ``off_scope`` (the fetched set);
* a *page* is a fetch of kind ``page`` with a 2xx status.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

__all__ = ["KINDS", "NOT_FETCHED_ERRORS", "FetchTable", "fetch_table"]

KINDS = ("page", "sitemap", "robots")
NOT_FETCHED_ERRORS = frozenset({"robots", "robots_unavailable", "off_scope"})


@dataclass(frozen=True)
class FetchTable:
    """One row per final crawl-log entry."""

    status: np.ndarray
    """int32 HTTP status, -1 where none."""
    size_bytes: np.ndarray
    """int64 body bytes."""
    fetched_at: np.ndarray
    """float64 seconds since the epoch."""
    host: np.ndarray
    host_names: tuple[str, ...]
    node: np.ndarray
    node_names: tuple[str, ...]
    kind: np.ndarray
    """int8 index into :data:`KINDS`."""
    error: np.ndarray
    """int32 index into ``error_names``; 0 = no error."""
    error_names: tuple[str, ...]
    retries: int
    bad_entries: int

    @property
    def n_entries(self) -> int:
        return int(self.status.shape[0])

    def fetches(self) -> np.ndarray:
        """Mask of fetches (the crawl's fetched set)."""
        excluded = [i for i, name in enumerate(self.error_names) if name in NOT_FETCHED_ERRORS]
        mask: np.ndarray = (self.kind != KINDS.index("robots")) & ~np.isin(self.error, excluded)
        return mask

    def pages(self) -> np.ndarray:
        """Mask of successfully fetched pages (kind page, 2xx)."""
        ok = (self.status >= 200) & (self.status < 300)
        mask: np.ndarray = self.fetches() & ok & (self.kind == KINDS.index("page"))
        return mask


class _Codes:
    def __init__(self, first: tuple[str, ...] = ()) -> None:
        self.names: list[str] = list(first)
        self.index = {name: i for i, name in enumerate(first)}

    def code(self, name: str) -> int:
        found = self.index.get(name)
        if found is None:
            found = self.index[name] = len(self.names)
            self.names.append(name)
        return found


def _timestamp(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _row(entry: Mapping[str, Any]) -> tuple[int, int, float, str, str, str] | None:
    """(status, bytes, time, host, kind, error) of a valid entry, else None."""
    status, size, error = entry.get("status"), entry.get("bytes", 0), entry.get("error")
    host, kind = entry.get("host"), entry.get("kind", "page")
    when = _timestamp(entry.get("fetched_at"))
    if not isinstance(entry.get("url"), str) or not isinstance(host, str) or when is None:
        return None
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        return None
    size = 0 if size is None else size
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return None
    if kind not in KINDS or (error is not None and not isinstance(error, str)):
        return None
    return (-1 if status is None else status), size, when, host, kind, (error or "")


class _Columns:
    """Rows appended one by one, turned into arrays at the end."""

    def __init__(self) -> None:
        self.hosts, self.nodes, self.errors = _Codes(), _Codes(), _Codes(("",))
        self.rows: list[tuple[int, int, float, int, int, int, int]] = []

    def add(self, row: tuple[int, int, float, str, str, str], node: str) -> None:
        status, size, when, host, kind, error = row
        self.rows.append((status, size, when, self.hosts.code(host), KINDS.index(kind),
                          self.errors.code(error), self.nodes.code(node)))

    def table(self, retries: int, bad: int) -> FetchTable:
        cols = list(zip(*self.rows)) if self.rows else [()] * 7
        return FetchTable(
            status=np.asarray(cols[0], dtype=np.int32),
            size_bytes=np.asarray(cols[1], dtype=np.int64),
            fetched_at=np.asarray(cols[2], dtype=np.float64),
            host=np.asarray(cols[3], dtype=np.int32),
            host_names=tuple(self.hosts.names),
            node=np.asarray(cols[6], dtype=np.int32),
            node_names=tuple(self.nodes.names),
            kind=np.asarray(cols[4], dtype=np.int8),
            error=np.asarray(cols[5], dtype=np.int32),
            error_names=tuple(self.errors.names),
            retries=retries,
            bad_entries=bad,
        )


def fetch_table(entries: Iterable[Mapping[str, Any]], default_node: str = "node") -> FetchTable:
    """The final entries of a crawl log (``node`` defaults to ``default_node``)."""
    columns = _Columns()
    retries = bad = 0
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("retry") is True:
            retries += 1
            continue
        row = _row(entry) if isinstance(entry, Mapping) else None
        node = entry.get("node", default_node) if row is not None else None
        if row is None or not isinstance(node, str):
            bad += 1
            continue
        columns.add(row, node)
    return columns.table(retries, bad)
