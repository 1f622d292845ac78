"""Where the page hooks' items go: JSON Lines, Parquet, or (Python API) the user's own object.

The place is ``[hooks] items`` (``--items PATH``), its format from the suffix; unset, ``items.jsonl``
in the node's directory. On one node the path is taken as given; in a cluster each node writes its
own, ``<stem>-<node id><suffix>`` in its node directory (nodes may run on other machines, and two
nodes must never share a file): ``--items items.parquet`` gives ``nodes/w0/items-w0.parquet``.

* **JSON Lines**: each page's items are appended (:mod:`webgather.appendio`) before the page
  completes: a kill -9 loses none (a page killed between the two is fetched and its items written
  again on resume: at least once).
* **Parquet** (pyarrow, the ``parquet`` extra): the path is a directory of part files
  (``part-00000.parquet``, ...; the layout Spark writes, read whole by ``pyarrow.parquet.read_table(PATH)``,
  pandas or DuckDB). Items are kept in memory and written as one part file (one row group) when
  ``items_batch`` of them are waiting, ``items_flush_s`` after the first of them arrived, and at the
  node's close. A part is written under a hidden temporary name and renamed: a kill -9 never leaves a
  torn part, and loses exactly the items not yet written, at most ``items_batch`` and at most
  ``items_flush_s`` seconds of them; their pages are done in the crawl log and are not fetched again.
  Columns and types: :mod:`webgather.runtime.engine.item_columns` (fixed by the first part; a resumed
  crawl continues with the columns of its existing parts).
* **An object** with ``write(item)`` and ``close()`` (:class:`ItemSink`, API only): called on the
  event loop with each item (the dict the hook yielded, ``page_url`` added); ``close()`` at the node's end.

A write that fails (disk full; the object's ``write`` raising) is :class:`~webgather.errors.WriteFailed`:
the crawl stops, says so on stderr and in the summary, and exits with status 3; Parquet items not
written by then stay in memory and are tried once more at close.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from webgather.appendio import append_bytes
from webgather.config import CrawlConfig
from webgather.errors import ConfigError, WriteFailed
from webgather.runtime.engine.item_columns import EXTRA, Columns, Kind

__all__ = ["ITEMS_FILE", "ItemSink", "ItemStore", "check_items_format", "items_path", "open_items"]

log = logging.getLogger(__name__)

ITEMS_FILE = "items.jsonl"
KINDS_KEY = "webgather.item_kinds"
"""Parquet schema metadata: the columns' kinds (``json`` columns are strings too)."""


@runtime_checkable
class ItemSink(Protocol):
    """Your own destination for items (``webgather.Crawl(..., items=obj)``)."""

    def write(self, item: dict[str, Any]) -> None:
        """Take one item (called on the crawl's event loop: keep it quick). Raising stops the crawl."""

    def close(self) -> None:
        """The node is ending: no more items."""


class ItemStore(Protocol):
    """What the hook runner writes a page's items to (one class per format below)."""

    location: str
    """Where the items go (a path, or the object's type), for the summary."""

    def put(self, items: Sequence[dict[str, Any]], lines: Sequence[bytes]) -> None:
        """One page's items, and the same as JSON lines; :class:`WriteFailed` if they cannot be stored."""

    def close(self) -> None: ...


def check_items_format(path: str) -> None:
    """:class:`ConfigError` (one line) if ``path`` asks for Parquet and pyarrow is not installed."""
    if path.endswith(".parquet"):
        try:
            importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise ConfigError(f"items {path!r}: Parquet needs pyarrow, which is not installed "
                              "(pip install 'webgather[parquet]'), or write JSON Lines (.jsonl)") from None


def items_path(setting: str | None, node_dir: Path, node_id: str, *, one_node: bool) -> Path:
    """The file (or Parquet directory) this node writes its items to (module docstring)."""
    if setting is None:
        return node_dir / ITEMS_FILE
    if one_node:
        return Path(setting)
    given = Path(setting)
    return node_dir / f"{given.stem}-{node_id}{given.suffix}"


def open_items(config: CrawlConfig, node_dir: Path, node_id: str, given: ItemSink | None) -> ItemStore:
    """The node's item store: ``given`` (the API's object), else the ``hooks.items`` file."""
    if given is not None:
        return ObjectItems(given)
    one_node = Path(config.out_dir).resolve() == node_dir.resolve()
    path = items_path(config.hooks.items, node_dir, node_id, one_node=one_node)
    if path.suffix == ".parquet":
        check_items_format(str(path))
        return ParquetItems(path, config.hooks.items_batch, config.hooks.items_flush_s)
    return JsonLinesItems(path)


class JsonLinesItems:
    """Appends each page's lines (opened at the first item)."""

    def __init__(self, path: Path) -> None:
        self.path, self.location = path, str(path)
        self._fd: int | None = None

    def put(self, items: Sequence[dict[str, Any]], lines: Sequence[bytes]) -> None:
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise WriteFailed.from_os(f"cannot open items file {self.path}", exc) from exc
        append_bytes(self._fd, b"".join(lines), f"cannot write items file {self.path}")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class ObjectItems:
    """The API user's :class:`ItemSink`; what it raises is a failed write."""

    def __init__(self, sink: ItemSink) -> None:
        self._sink, self.location = sink, f"<{type(sink).__name__}>"

    def put(self, items: Sequence[dict[str, Any]], lines: Sequence[bytes]) -> None:
        for item in items:
            self._call("write", lambda: self._sink.write(item))

    def close(self) -> None:
        self._call("close", self._sink.close)

    def _call(self, name: str, call: Callable[[], None]) -> None:
        try:
            call()
        except Exception as exc:  # the user's code: its failure stops the crawl, loudly, as a full disk does
            raise WriteFailed(f"item sink {self.location}.{name} raised {type(exc).__name__}: {exc}") from None


_ARROW_TYPES = {"string": "string", "bool": "bool_", "int": "int64", "float": "float64", "json": "string"}


class ParquetItems:
    """Part files of at most ``batch`` items, each written whole or not at all (module docstring)."""

    def __init__(self, path: Path, batch: int, flush_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.path, self.location = path, str(path)
        self._pa: Any = importlib.import_module("pyarrow")
        self._pq: Any = importlib.import_module("pyarrow.parquet")
        self._batch, self._flush_s, self._clock = batch, flush_s, clock
        self._rows: list[dict[str, Any]] = []
        self._first_at = 0.0
        self._timer: Any = None
        self._error: WriteFailed | None = None
        self.parts_written = 0
        self._columns, self._next = self._open_directory()

    def _open_directory(self) -> tuple[Columns | None, int]:
        """Create the directory, drop torn temporaries, and continue after the parts already there."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            for stale in self.path.glob(".part-*.tmp"):
                stale.unlink()
            parts = sorted(self.path.glob("part-*.parquet"))
        except OSError as exc:
            raise WriteFailed.from_os(f"cannot open Parquet items directory {self.path}", exc) from exc
        if not parts:
            return None, 0
        meta = self._pq.read_schema(parts[0]).metadata or {}
        kinds: dict[str, Kind] = json.loads(meta.get(KINDS_KEY.encode(), b"{}"))
        return Columns(tuple(kinds), tuple(kinds.values())), int(parts[-1].stem.split("-")[-1]) + 1

    def put(self, items: Sequence[dict[str, Any]], lines: Sequence[bytes]) -> None:
        self._raise_pending()
        if not items:
            return
        if not self._rows:
            self._first_at = self._clock()
            self._arm_timer()
        self._rows.extend(items)
        if len(self._rows) >= self._batch or self._clock() - self._first_at >= self._flush_s:
            self.flush()

    def flush(self) -> None:
        """Write what waits as one part file; on failure it keeps waiting (and :class:`WriteFailed`)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._rows:
            rows = self._rows[:self._batch]
            self._write_part(rows)
            del self._rows[:len(rows)]

    def close(self) -> None:
        self.flush()
        self._raise_pending()

    def _raise_pending(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _arm_timer(self) -> None:
        """Flush ``flush_s`` after the first waiting item even if no other page comes (a quiet crawl)."""
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on a loop (a test, a tool): puts and close flush
            return
        self._timer = loop.call_later(self._flush_s, self._timed_flush)

    def _timed_flush(self) -> None:
        self._timer = None
        try:
            self.flush()
        except WriteFailed as exc:  # raised at the next put or at close: the crawl stops there
            log.error("%s", exc)
            self._error = exc

    def _write_part(self, rows: list[dict[str, Any]]) -> None:
        pa = self._pa
        if self._columns is None:
            self._columns = Columns.infer(rows)
        columns = self._columns
        values, extras = columns.split(rows)
        fields = [pa.field(n, getattr(pa, _ARROW_TYPES[k])()) for n, k in zip(columns.names, columns.kinds, strict=True)]
        schema = pa.schema([*fields, pa.field(EXTRA, pa.string())],
                           metadata={KINDS_KEY: json.dumps(dict(zip(columns.names, columns.kinds, strict=True)))})
        arrays = [pa.array(v, type=f.type) for v, f in zip(values, fields, strict=True)]
        table = pa.Table.from_arrays([*arrays, pa.array(extras, type=pa.string())], schema=schema)
        name = f"part-{self._next:05d}.parquet"
        temporary, final = self.path / f".{name}.tmp", self.path / name
        try:
            self._pq.write_table(table, temporary, row_group_size=len(rows))
            os.replace(temporary, final)
        except OSError as exc:  # pyarrow's IO errors are OSErrors (ENOSPC included)
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            raise WriteFailed.from_os(f"cannot write Parquet items {final}", exc) from exc
        self._next += 1
        self.parts_written += 1
