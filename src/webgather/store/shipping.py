"""Copying a node's closed WARC files, each with its CDXJ lines, to the shared store.

A node's WARC files are never appended to once closed (:mod:`.warc`), so a
closed file is copied once: to ``warc/NAME``, after its index lines (those of
the node's ``index.cdxj`` whose ``filename`` is NAME) went to
``cdxj/NAME.cdxj``. The WARC goes last: a file is "shipped" once its WARC key
exists (a crash between the two puts leaves only a CDXJ object, put again
with its WARC next time). What was shipped before a restart is learnt from
the store's listing.

The index is read incrementally, up to the length :meth:`Archive.rotate
<webgather.store.warc.Archive.rotate>` reported (every line before it belongs
to a closed file); lines of files not shipped yet wait in memory until their
file is (at most one checkpoint's worth). Blocking: run it in a worker thread.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from webgather.errors import StoreError
from webgather.store.cdxj import INDEX_NAME
from webgather.store.shared import SharedStore
from webgather.store.warc import PREFIX, closed_files

__all__ = ["WarcShipper", "cdxj_key", "warc_key"]


def warc_key(name: str) -> str:
    return f"warc/{name}"


def cdxj_key(name: str) -> str:
    return f"cdxj/{name}.cdxj"


class WarcShipper:
    """Ships one node's closed WARC files and their CDXJ (module docstring). One thread at a time."""

    def __init__(self, store: SharedStore, warc_dir: Path, node: str) -> None:
        self.store = store
        self.warc_dir = Path(warc_dir)
        self.node = node
        self.shipped: set[str] | None = None
        self.files = 0
        """Files shipped by this object."""
        self.bytes = 0
        self._index_pos = 0
        self._lines: dict[str, list[bytes]] = defaultdict(list)

    def ship(self, closed: Sequence[str], index_bytes: int) -> int:
        """Ship the files of ``closed`` not shipped yet; returns how many were."""
        if self.shipped is None:
            self.shipped = {key.removeprefix("warc/") for key in self.store.list(f"warc/{PREFIX}-{self.node}-")}
        self._read_index(index_bytes)
        count = 0
        for name in closed:
            lines = self._lines.pop(name, [])
            if name in self.shipped:
                continue
            path = self.warc_dir / name
            self.store.put_bytes(cdxj_key(name), b"".join(lines))
            self.store.put_file(path, warc_key(name))
            self.shipped.add(name)
            self.bytes += path.stat().st_size
            count += 1
        self.files += count
        return count

    def ship_all(self) -> int:
        """At the end (the archive closed): ship every file of the node's not shipped yet."""
        index = self.warc_dir / INDEX_NAME
        return self.ship(closed_files(self.warc_dir, self.node), index.stat().st_size if index.exists() else 0)

    def _read_index(self, upto_bytes: int) -> None:
        if upto_bytes <= self._index_pos:
            return
        try:
            with open(self.warc_dir / INDEX_NAME, "rb") as index:
                index.seek(self._index_pos)
                chunk = index.read(upto_bytes - self._index_pos)
        except OSError as exc:
            raise StoreError(f"cannot read {self.warc_dir / INDEX_NAME}: {exc.strerror}") from None
        end = chunk.rfind(b"\n") + 1  # whole lines only (rotation reports a line boundary)
        for line in chunk[:end].splitlines(keepends=True):
            self._lines[_filename(line)].append(line)
        self._index_pos += end


def _filename(line: bytes) -> str:
    try:
        return str(json.loads(line.split(b" ", 2)[2])["filename"])
    except (IndexError, ValueError, KeyError, TypeError):
        raise StoreError(f"unreadable index line {line[:80]!r}") from None
