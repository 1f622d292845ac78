"""DiskSeen: the seen-set with a bounded memory tier over sorted run files (DRUM / Mercator sieve).

New keys go to a :class:`MemorySeen` tier. When it holds ``memory_entries``
keys (or on :meth:`DiskSeen.flush`) it is written, sorted, as one *run* file
(``run-<lo>-<hi>.npy``: a plain ``.npy`` array of little-endian ``uint64``).
Runs are disjoint (a key enters the tier only if no run has it) and merged two
at a time when the newer is at least half the size of the older, so there are
O(log N) of them. Lookups are batched: the batch is sorted once and each run
answers with one ``searchsorted`` over a read-only ``numpy.memmap``, so RAM
holds the memory tier plus the OS page cache's choice of run pages (counted in
RSS as file-backed, reclaimable memory), whatever the number of keys. Merges
stream ``merge_chunk_entries`` keys at a time, so they too need bounded RAM.

Crash safety: a run is written to ``*.tmp`` and renamed into place; a merged
run is named by the span of generations it covers (``lo..hi``) and written
before its inputs are deleted, so on open a run covered by another run's span
is a left-over input and is removed. Keys still in the memory tier are not on
disk until :meth:`flush`: a standalone DiskSeen is durable at ``flush``; the
frontier journals those keys in its own database and replays them on open
(see :mod:`webgather.frontier.persist`), and sets ``auto_flush=False`` so that
a run is only ever written after that journal was committed.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from webgather.errors import CorruptState, StoreError, WriteFailed
from webgather.frontier.seen import (
    DIRECTORY_MIN_BATCH,
    DIRECTORY_MIN_KEYS,
    Directory,
    KeyArray,
    MaskArray,
    MemorySeen,
    as_keys,
    unique_first,
    bucket_slice,
    member,
)

__all__ = ["DiskSeen"]

_RUN_NAME = re.compile(r"^run-(\d{10})-(\d{10})\.npy$")


@dataclass(slots=True)
class _Run:
    lo: int
    hi: int
    path: Path
    keys: KeyArray
    directory: Directory | None = None
    """Built on the first large batch that searches a large run."""


class DiskSeen:
    """Exact, persistent seen-set whose RAM use is bounded by ``memory_entries`` (module doc)."""

    def __init__(self, directory: Path | str, memory_entries: int = 4_000_000, *,
                 auto_flush: bool = True, merge_chunk_entries: int = 1 << 20) -> None:
        if memory_entries < 1 or merge_chunk_entries < 1:
            raise ValueError("memory_entries and merge_chunk_entries must be >= 1")
        self.directory = Path(directory)
        self.memory_entries = memory_entries
        self.auto_flush = auto_flush
        self._chunk = merge_chunk_entries
        self._mem = MemorySeen()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._runs = _load_runs(self.directory)
        except OSError as exc:
            raise StoreError(f"cannot open seen-set directory {self.directory}: {exc}") from exc
        self._next_gen = max((r.hi for r in self._runs), default=0) + 1
        self._on_disk = sum(len(r.keys) for r in self._runs)

    # -- SeenSet ---------------------------------------------------------------

    def add_many(self, keys: KeyArray) -> MaskArray:
        keys = as_keys(keys)
        mask = np.zeros(len(keys), dtype=bool)
        if not len(keys):
            return mask
        uniq, first = unique_first(keys)
        fresh = ~(self._mem.contains_many(uniq) | self._in_runs(uniq))
        mask[first[fresh]] = True
        new_keys = uniq[fresh]
        if len(new_keys):
            self._mem.insert_new(new_keys)
            if self.auto_flush and len(self._mem) >= self.memory_entries:
                self.flush()
        return mask

    def contains_many(self, keys: KeyArray) -> MaskArray:
        keys = as_keys(keys)
        if not len(keys):
            return np.zeros(0, dtype=bool)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        found_sorted = self._mem.contains_many(sorted_keys) | self._in_runs(sorted_keys)
        found = np.empty(len(keys), dtype=bool)
        found[order] = found_sorted
        return found

    def __len__(self) -> int:
        return len(self._mem) + self._on_disk

    def export_bucket(self, bucket: int) -> KeyArray:
        parts = [self._mem.export_bucket(bucket)]
        for run in self._runs:
            start, stop = bucket_slice(run.keys, bucket)
            parts.append(np.array(run.keys[start:stop], dtype=np.uint64))
        out = np.concatenate(parts)
        out.sort()
        return out

    def drop_bucket(self, bucket: int) -> int:
        """Remove the bucket's keys; each affected run is rewritten atomically."""
        dropped = self._mem.drop_bucket(bucket)
        for run in list(self._runs):
            start, stop = bucket_slice(run.keys, bucket)
            if stop > start:
                dropped += stop - start
                self._rewrite_without(run, start, stop)
        return dropped

    def flush(self) -> None:
        """Write the memory tier as a run (then merge runs as needed): durable afterwards."""
        if not len(self._mem):
            return
        gen = self._next_gen
        self._next_gen += 1
        keys = self._mem.sorted_keys()
        run = self._write_run(gen, gen, [keys], len(keys))
        self._runs.append(run)
        self._on_disk += len(run.keys)
        self._mem.clear()
        self._compact()

    # -- beyond the protocol ---------------------------------------------------------

    @property
    def memory_len(self) -> int:
        """Keys in the memory tier (not on disk until the next flush)."""
        return len(self._mem)

    @property
    def runs(self) -> int:
        return len(self._runs)

    def close(self) -> None:
        """Flush and let go of the run files."""
        self.flush()
        self._runs = []

    # -- internals ------------------------------------------------------------------

    def _in_runs(self, sorted_keys: KeyArray) -> MaskArray:
        found = np.zeros(len(sorted_keys), dtype=bool)
        big = len(sorted_keys) >= DIRECTORY_MIN_BATCH
        for run in self._runs:
            if big and run.directory is None and len(run.keys) >= DIRECTORY_MIN_KEYS:
                run.directory = Directory(run.keys)
            found |= member(run.keys, sorted_keys, run.directory if big else None)
        return found

    def _compact(self) -> None:
        runs = self._runs
        while len(runs) >= 2 and 2 * len(runs[-1].keys) >= len(runs[-2].keys):
            older, newer = runs[-2], runs[-1]
            total = len(older.keys) + len(newer.keys)
            merged = self._write_run(older.lo, newer.hi, _merge(older.keys, newer.keys, self._chunk), total)
            runs[-2:] = [merged]
            _unlink(older.path)
            _unlink(newer.path)

    def _write_run(self, lo: int, hi: int, chunks: Iterable[KeyArray], total: int) -> _Run:
        path = self.directory / f"run-{lo:010d}-{hi:010d}.npy"
        tmp = path.with_suffix(".tmp")
        header = {"descr": "<u8", "fortran_order": False, "shape": (total,)}
        try:
            with tmp.open("wb") as handle:
                np.lib.format.write_array_header_1_0(handle, header)
                for chunk in chunks:
                    handle.write(np.ascontiguousarray(chunk, dtype="<u8").tobytes())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):  # a full disk: give the space back
                tmp.unlink(missing_ok=True)
            raise WriteFailed.from_os(f"cannot write seen-set run {path}", exc) from exc
        return _Run(lo, hi, path, _map(path))

    def _rewrite_without(self, run: _Run, start: int, stop: int) -> None:
        keys = run.keys
        remaining = len(keys) - (stop - start)
        self._on_disk -= stop - start
        if remaining == 0:
            self._runs.remove(run)
            _unlink(run.path)
            return
        step = self._chunk
        chunks = [keys[i : min(i + step, start)] for i in range(0, start, step)]
        chunks += [keys[i : min(i + step, len(keys))] for i in range(stop, len(keys), step)]
        new = self._write_run(run.lo, run.hi, chunks, remaining)
        self._runs[self._runs.index(run)] = new


def _merge(a: KeyArray, b: KeyArray, chunk: int) -> Iterator[KeyArray]:
    """The sorted merge of two sorted, disjoint arrays, at most ``chunk`` keys of each at a time.

    Each step takes the windows of the next ``chunk`` keys of both, cuts both at
    the smaller of their last keys and merges what lies below: the window that
    set the cut is used up, so every step makes progress.
    """
    i = j = 0
    while i < len(a) and j < len(b):
        wa, wb = a[i : i + chunk], b[j : j + chunk]
        pivot = min(wa[-1], wb[-1])
        ei = i + int(np.searchsorted(wa, pivot, side="right"))
        ej = j + int(np.searchsorted(wb, pivot, side="right"))
        piece = np.concatenate((a[i:ei], b[j:ej]))
        piece.sort(kind="stable")
        yield piece
        i, j = ei, ej
    rest, at = (a, i) if i < len(a) else (b, j)
    for k in range(at, len(rest), chunk):
        yield np.asarray(rest[k : k + chunk])


def _map(path: Path) -> KeyArray:
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CorruptState(f"seen-set run {path} is unreadable: {exc}") from exc
    if arr.dtype != np.dtype("<u8") or arr.ndim != 1:
        raise CorruptState(f"seen-set run {path} holds {arr.dtype} {arr.shape}, not a uint64 vector")
    return arr  # type: ignore[no-any-return]


def _load_runs(directory: Path) -> list[_Run]:
    for tmp in directory.glob("*.tmp"):
        _unlink(tmp)
    spans = []
    for path in directory.iterdir():
        match = _RUN_NAME.match(path.name)
        if match:
            spans.append((int(match.group(1)), int(match.group(2)), path))
    runs = []
    for lo, hi, path in sorted(spans):
        if any(olo <= lo and hi <= ohi and (olo, ohi) != (lo, hi) for olo, ohi, _ in spans):
            _unlink(path)  # an input of a merge that finished
            continue
        runs.append(_Run(lo, hi, path, _map(path)))
    return runs


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
