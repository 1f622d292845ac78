"""``summary.json``: the totals of a run, written atomically (temp file + ``os.replace``).

A reader sees the previous summary or the new one, never a half-written
file, even after a kill -9 in the middle of :func:`write_summary`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webgather.errors import CorruptState, StoreError, WriteFailed

__all__ = ["SUMMARY_NAME", "read_summary", "write_summary"]

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
