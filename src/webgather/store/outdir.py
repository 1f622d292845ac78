"""The output directory, checked before a crawl starts: a one-line error, not a traceback midway.

``--out`` naming an existing file, a path under a file, or a directory this
process cannot write (a read-only mount, or permissions for a non-root user)
would otherwise surface as an ``OSError`` from deep inside the archive writer.
Writability is tried with a real file rather than ``os.access``: root passes
every permission check but still cannot write a read-only filesystem.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from webgather.errors import SeedError, StoreError, WriteFailed

__all__ = ["SEEDS_FILE", "merge_seeds", "prepare_out_dir"]


def prepare_out_dir(path: str | Path, *, create: bool = True) -> Path:
    """``path`` as a directory this process can write, created with its parents if ``create``.

    Raises :class:`StoreError` (one line, naming the path and the reason). With
    ``create=False`` a missing directory is returned as is: the caller reports it.
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise StoreError(f"output directory {out} is an existing file, not a directory")
    if not create and not out.exists():
        return out
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out, prefix=".webgather-probe-"):
            pass
    except OSError as exc:
        raise StoreError(f"cannot write the output directory {out}: {exc.strerror or exc}") from None
    return out


SEEDS_FILE = "seeds.txt"


def merge_seeds(out_dir: Path, seeds: Sequence[str]) -> list[str]:
    """Seeds of this run plus those of earlier runs in ``out_dir``; saved back."""
    path = out_dir / SEEDS_FILE
    try:
        known = path.read_text().split() if path.exists() else []
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    merged = list(dict.fromkeys([*known, *seeds]))
    if not merged:
        raise SeedError(f"no seeds given and {path} does not exist: name at least one seed URL")
    if merged == known:
        return merged  # a resume with the same seeds writes nothing (the disk may be full)
    tmp = path.with_suffix(".tmp")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text("\n".join(merged) + "\n")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise WriteFailed.from_os(f"cannot write {path}", exc) from exc
    return merged
