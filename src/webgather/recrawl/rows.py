"""Re-crawl records as bytes, for a bucket hand-off between cluster nodes. Pure.

A bucket that changes owner takes its per-URL re-crawl records with it (the
new owner must send the same conditional requests, refer its revisit records
to the same originals and continue each URL's change history). They travel as
one compact JSON array of rows, each row the :class:`~.observe.UrlRecord`
fields in declaration order (``NaN`` as ``null``, the archived original as a
list of its fields). JSON rather than columns: a record has two dozen fields
of mixed types, a hand-off carries at most the rows of one bucket, and the
payload stays plain data (no pickle). :func:`decode_rows` checks every value's
type and range and raises ``ValueError`` for anything else, so garbage
never becomes a record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from webgather.recrawl.observe import UrlRecord
from webgather.store.warc import ArchiveRef

__all__ = ["decode_rows", "encode_rows"]

_FIELDS = [f.name for f in fields(UrlRecord)]
_REF_FIELDS = [f.name for f in fields(ArchiveRef)]
_U64 = (0, (1 << 64) - 1)
_INTS = {"fp": _U64, "simhash": _U64, "depth": (0, 1 << 31), "status": (0, 999), "visits": (0, 1 << 62),
         "changes": (0, 1 << 62), "failures": (0, 1 << 62), "dead_cycle": (0, 1 << 62), "pending_cycle": (0, 1 << 62)}
_NULLABLE = {"status", "etag", "last_modified", "digest", "simhash", "original", "links_digest", "dead",
             "dead_cycle", "near_dup_of", "pending_cycle", "first_age_s"}
_FLOATS = {"first_fetch_s", "last_fetch_s", "last_change_s", "rate_per_s", "first_age_s"}
_NAN_FLOATS = {"first_fetch_s", "last_fetch_s", "last_change_s"}
"""Floats whose unknown value is NaN (sent as null)."""


def encode_rows(records: Sequence[UrlRecord]) -> bytes:
    rows = []
    for record in records:
        row: list[Any] = []
        for name in _FIELDS:
            value = getattr(record, name)
            if isinstance(value, float) and math.isnan(value):
                value = None
            elif name == "original" and value is not None:
                value = [getattr(value, f) for f in _REF_FIELDS]
            elif name == "history":
                value = [[t, bool(c)] for t, c in value]
            row.append(value)
        rows.append(row)
    return json.dumps(rows, separators=(",", ":"), allow_nan=False).encode()


def decode_rows(data: bytes) -> tuple[UrlRecord, ...]:
    """The records in ``data``; ``ValueError`` for anything that is not exactly such rows."""
    try:
        rows = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"re-crawl rows are not JSON: {exc}") from None
    if not isinstance(rows, list):
        raise ValueError("re-crawl rows must be a list")
    return tuple(_record(row) for row in rows)


def _record(row: Any) -> UrlRecord:
    if not isinstance(row, list) or len(row) != len(_FIELDS):
        raise ValueError(f"a re-crawl row must be a list of {len(_FIELDS)} values")
    values = {name: _value(name, value) for name, value in zip(_FIELDS, row, strict=True)}
    return UrlRecord(**values)


def _value(name: str, value: Any) -> Any:
    if value is None:
        if name in _NAN_FLOATS:
            return math.nan
        if name in _NULLABLE:
            return None
        raise ValueError(f"re-crawl row: {name} is missing")
    if name in _INTS:
        low, high = _INTS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"re-crawl row: {name} is not an integer in {low}..{high}")
        return value
    if name in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"re-crawl row: {name} is not a finite number")
        return float(value)
    if name == "original":
        return _ref(value)
    if name == "history":
        return _history(value)
    if not isinstance(value, str):
        raise ValueError(f"re-crawl row: {name} is not a string")
    return value


def _ref(value: Any) -> ArchiveRef:
    if not isinstance(value, list) or len(value) != len(_REF_FIELDS):
        raise ValueError("re-crawl row: original is not an archive reference")
    kinds = [type(getattr(ArchiveRef("", 0, 0, "", "", ""), f)) for f in _REF_FIELDS]
    if any(isinstance(v, bool) or not isinstance(v, k) for v, k in zip(value, kinds, strict=True)):
        raise ValueError("re-crawl row: original has a value of the wrong type")
    return ArchiveRef(*value)


def _history(value: Any) -> tuple[tuple[float, bool], ...]:
    if not isinstance(value, list):
        raise ValueError("re-crawl row: history is not a list")
    out = []
    for obs in value:
        if (not isinstance(obs, list) or len(obs) != 2 or isinstance(obs[0], bool)
                or not isinstance(obs[0], (int, float)) or not math.isfinite(obs[0]) or not isinstance(obs[1], bool)):
            raise ValueError("re-crawl row: a history observation is not [interval_s, changed]")
        out.append((float(obs[0]), obs[1]))
    return tuple(out)
