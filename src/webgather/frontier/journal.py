"""The redo journal: row-level changes of the frontier since its last SQLite checkpoint.

Every change the persistent frontier makes (queue rows pushed, done, retried,
removed; items taken; host accepted counts; new seen keys) is appended to an
in-memory list of *ops*; :meth:`Journal.write` frames the list as one record
(``<u32 length><u32 crc32><marshal payload>``) and hands it to the OS with one
``os.write``: the group commit, a few microseconds per page. Every few seconds
(or megabytes) the frontier *checkpoints*: it applies the same changes to SQLite
in one sorted batch and commits, with the next journal generation recorded in
the same transaction, then starts the new journal file and deletes the old one.

Replay (on open) applies a journal's ops to the SQLite rows directly; it needs
none of the in-memory structures, which are then rebuilt from SQLite. A torn
record at the end of the file (the process died inside ``write``) is ignored;
a bad record followed by more data is :class:`~webgather.errors.CorruptState`.
``marshal`` is used for speed and because loading it runs no code; a journal
lives only until the next checkpoint, so its format need not outlive a Python
version.
"""

from __future__ import annotations

import marshal
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from webgather.appendio import append_bytes
from webgather.errors import CorruptState, StoreError

__all__ = ["Journal", "Op", "read_journal"]

Op = tuple[Any, ...]
"""``("push", host, rows)``, ``("take", fp)``, ``("done", host, key, seq, fp)``,
``("retry", host, key, seq, fp, attempt)``, ``("remove", host, [(key, seq)])``,
``("accepted", host, n)``, ``("seen", keys_bytes)``; fps are signed 64-bit."""

_HEADER = struct.Struct("<II")


def journal_path(directory: Path, gen: int) -> Path:
    return directory / f"journal-{gen:010d}.log"


class Journal:
    """An append-only journal file of one generation, written a record at a time."""

    def __init__(self, directory: Path, gen: int) -> None:
        self.directory = directory
        self.gen = gen
        self.ops: list[Op] = []
        self.bytes_written = 0
        self._fd, self._size = self._open(gen)
        # built once a file, not once a record (a record is written per page)
        self._what = f"cannot write frontier journal {journal_path(directory, gen)}"

    def _open(self, gen: int) -> tuple[int, int]:
        """The file's descriptor and size (kept here from now on: this journal is its one writer)."""
        try:
            fd = os.open(journal_path(self.directory, gen), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot open frontier journal in {self.directory}: {exc}") from exc
        try:
            return fd, os.fstat(fd).st_size
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"cannot open frontier journal in {self.directory}: {exc}") from exc

    def write(self) -> None:
        """Append the pending ops as one record (in the OS when this returns).

        A failed write (disk full) leaves the file as it was and the ops pending
        (:class:`WriteFailed`): a later write or checkpoint retries them whole.
        """
        if not self.ops:
            return
        payload = marshal.dumps(self.ops)
        data = _HEADER.pack(len(payload), zlib.crc32(payload)) + payload
        self._size = append_bytes(self._fd, data, self._what, self._size) + len(data)
        self.ops = []
        self.bytes_written += len(data)

    def rotate(self, gen: int) -> None:
        """Start generation ``gen`` (already recorded by a committed checkpoint); drop the old file."""
        os.close(self._fd)
        self._fd, self._size = self._open(gen)
        self._what = f"cannot write frontier journal {journal_path(self.directory, gen)}"
        self.gen = gen
        self.bytes_written = 0
        self.ops = []
        remove_stale(self.directory, keep=gen)

    def close(self) -> None:
        os.close(self._fd)


def remove_stale(directory: Path, keep: int) -> None:
    """Delete journal files of generations other than ``keep``."""
    for path in directory.glob("journal-*.log"):
        if path != journal_path(directory, keep):
            try:
                path.unlink()
            except FileNotFoundError:
                pass


def read_journal(directory: Path, gen: int) -> Iterator[list[Op]]:
    """The records of journal ``gen`` in order (none if the file does not exist).

    Read a record at a time, so a resume needs RAM for one record, not the file."""
    path = journal_path(directory, gen)
    try:
        with path.open("rb") as handle:
            yield from _records(handle, os.fstat(handle.fileno()).st_size, path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot read frontier journal {path}: {exc}") from exc


def _records(handle: BinaryIO, size: int, path: Path) -> Iterator[list[Op]]:
    at = 0
    while at + _HEADER.size <= size:
        length, crc = _HEADER.unpack(handle.read(_HEADER.size))
        payload = handle.read(length)
        end = at + _HEADER.size + length
        if len(payload) < length:
            return  # torn last record: the process died inside write()
        if zlib.crc32(payload) != crc:
            if end >= size:
                return
            raise CorruptState(f"frontier journal {path}: bad record at byte {at}")
        try:
            ops = marshal.loads(payload)
        except (ValueError, EOFError, TypeError) as exc:
            raise CorruptState(f"frontier journal {path}: unreadable record at byte {at}: {exc}") from exc
        if not isinstance(ops, list):
            raise CorruptState(f"frontier journal {path}: record at byte {at} is not a list of ops")
        yield ops
        at = end
