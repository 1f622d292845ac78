"""``summary.json``: the totals of a crawl across its runs, written atomically (temp file + ``os.replace``).

A reader sees the previous summary or the new one, never a half-written
file, even after a kill -9 in the middle of :func:`write_summary`.

A crawl resumed by the same command adds up (:func:`add_run`, pure): counters
(pages, bytes, status and error counts, wall and CPU seconds) are summed over
the runs, the state at the end (frontier, ``finished``, ``end``) is the last
run's, and ``runs`` lists each run's own figures. ``pages_99_s`` (seconds from
the run's start until 99 % of its pages were fetched, within 0.5 %) and
``last_page_s`` (to its last page) stand beside ``pages_per_s``: a crawl whose
last few pages wait on slow or dead hosts has a wall time far past both; in
the totals of a resumed crawl they are the last run's. A run ended by kill -9 writes
no summary: its pages are in the crawl log and the WARC files, not in the totals.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webgather.errors import CorruptState, StoreError, WriteFailed

__all__ = ["SUMMARY_NAME", "add_run", "read_summary", "write_summary"]

SUMMARY_NAME = "summary.json"


def write_summary(out_dir: Path, summary: Mapping[str, object]) -> Path:
    """Replace ``out_dir/summary.json`` with ``summary`` (JSON data) in one atomic step."""
    target = Path(out_dir) / SUMMARY_NAME
    try:
        text = json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise StoreError(f"summary is not JSON data: {exc}") from None
    temp = target.with_name(f".{SUMMARY_NAME}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with temp.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise WriteFailed.from_os(f"cannot write {target}", exc) from exc
    return target


def read_summary(out_dir: Path) -> dict[str, Any]:
    """The summary of the run in ``out_dir``; :class:`StoreError` if there is none."""
    path = Path(out_dir) / SUMMARY_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StoreError(f"no {SUMMARY_NAME} in {out_dir}") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        summary = json.loads(text)
    except ValueError as exc:
        raise CorruptState(f"{path} is not JSON: {exc}") from None
    if not isinstance(summary, dict):
        raise CorruptState(f"{path} does not hold a JSON object")
    return summary


SUMMED = ("pages", "requisites", "attempts", "retries", "robots_fetches", "bytes_received", "links_found", "urls_new")
SUMMED_S = ("wall_s", "cpu_s")
COUNTED = ("status", "errors")
RUN_FIGURES = ("epoch", "end", "finished", "pages", "bytes_received", "wall_s", "cpu_s", "pages_per_s",
               "pages_99_s", "last_page_s", "cpu_ms_per_page", "peak_rss_mib", "write_failed")
"""What ``runs`` keeps of each run."""


def add_run(previous: Mapping[str, Any] | None, run: Mapping[str, Any]) -> dict[str, Any]:
    """The crawl's summary after ``run``, given the one before it (None: the first run). Pure."""
    runs = list(previous.get("runs") or [_run_figures(previous)]) if previous else []
    total = dict(run)
    if previous:
        for key in SUMMED:
            total[key] = int(previous.get(key) or 0) + int(run.get(key) or 0)
        for key in SUMMED_S:
            total[key] = round(float(previous.get(key) or 0.0) + float(run.get(key) or 0.0), 3)
        for key in COUNTED:
            merged = dict(previous.get(key) or {})
            for name, n in (run.get(key) or {}).items():
                merged[name] = merged.get(name, 0) + n
            total[key] = dict(sorted(merged.items()))
        total["peak_rss_mib"] = max(float(previous.get("peak_rss_mib") or 0.0), float(run.get("peak_rss_mib") or 0.0))
        pages, wall_s, cpu_s = total["pages"], total["wall_s"], total["cpu_s"]
        total["pages_per_s"] = round(pages / wall_s, 1) if wall_s > 0 else 0.0
        total["cpu_ms_per_page"] = round(1000 * cpu_s / pages, 3) if pages else None
    total["runs"] = [*runs, _run_figures(run)]
    return total


def _run_figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {key: summary[key] for key in RUN_FIGURES if key in summary}


def record_run(out_dir: Path, run: Mapping[str, Any]) -> dict[str, Any]:
    """Add ``run`` to the crawl's ``summary.json`` in ``out_dir`` (:func:`add_run`) and return the totals.
    An unreadable previous summary is started afresh (its runs are in the crawl log)."""
    try:
        previous: dict[str, Any] | None = read_summary(out_dir)
    except StoreError:  # none yet (the first run), or not JSON (a damaged disk): count from this run
        previous = None
    total = add_run(previous, run)
    write_summary(out_dir, total)
    return total
