"""Items (JSON objects of any shape) as the typed columns of a Parquet file: pure logic, no IO.

A Parquet file has one schema; a hook's items need not share one. The rule:

* **Columns** are fixed by the first batch written (the first part file of the sink): ``page_url``
  first, then the union of that batch's keys in the order first seen, then ``_extra``.
* A column's **kind** comes from its values in that batch: all strings -> string, all booleans ->
  bool, all integers (within int64) -> int64, integers and floats -> float64; anything else (lists,
  objects, mixed kinds, a column of nulls only) -> ``json``: a string column of each value's JSON text.
* A later item is written against those columns: a missing key is null; a key outside them (or the
  key ``_extra`` itself), or a value that does not fit its column's kind (a string in an int64
  column), goes into ``_extra``: that row's leftovers as one JSON object (null when nothing was left).
  An integer in a float64 column is stored as a float. Nothing is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["EXTRA", "PAGE_URL", "Columns", "Kind", "kind_of"]

Kind = Literal["string", "bool", "int", "float", "json"]
EXTRA = "_extra"
PAGE_URL = "page_url"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _scalar_kind(value: object) -> Kind:
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "bool"
    if isinstance(value, int):
        return "int" if _INT64_MIN <= value <= _INT64_MAX else "json"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "json"


def kind_of(values: Iterable[object]) -> Kind:
    """The kind of a column holding ``values`` (module docstring)."""
    kinds = {_scalar_kind(v) for v in values if v is not None}
    if len(kinds) == 1:
        return kinds.pop()
    if kinds == {"int", "float"}:
        return "float"
    return "json"  # mixed, or nothing but nulls: JSON text keeps any later value


def _fits(kind: Kind, value: object) -> bool:
    if value is None or kind == "json":
        return True
    found = _scalar_kind(value)
    return found == kind or (kind == "float" and found == "int")


def json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Columns:
    """The columns of a sink's Parquet files (``_extra`` not among them: it is always last)."""

    names: tuple[str, ...]
    kinds: tuple[Kind, ...]

    @classmethod
    def infer(cls, rows: Sequence[Mapping[str, Any]]) -> Columns:
        """The columns of a first batch (module docstring)."""
        names: dict[str, None] = {PAGE_URL: None}
        for row in rows:
            names.update(dict.fromkeys(k for k in row if k != EXTRA))
        return cls(tuple(names), tuple(kind_of(row.get(name) for row in rows) for name in names))

    def split(self, rows: Sequence[Mapping[str, Any]]) -> tuple[list[list[object]], list[str | None]]:
        """Each column's values (JSON text in a ``json`` column) and each row's ``_extra`` (module docstring)."""
        columns: list[list[object]] = [[] for _ in self.names]
        extras: list[str | None] = []
        known = dict(zip(self.names, self.kinds, strict=True))
        for row in rows:
            left = {k: v for k, v in row.items() if k not in known}
            for column, name, kind in zip(columns, self.names, self.kinds, strict=True):
                value = row.get(name)
                if not _fits(kind, value):
                    left[name], value = value, None
                column.append(json_text(value) if kind == "json" and value is not None else value)
            extras.append(json_text(left) if left else None)
        return columns, extras
