"""The output directory, checked before a crawl starts: a one-line error, not a traceback midway.

``--out`` naming an existing file, a path under a file, or a directory this
process cannot write (a read-only mount, or permissions for a non-root user)
would otherwise surface as an ``OSError`` from deep inside the archive writer.
Writability is tried with a real file rather than ``os.access``: root passes
every permission check but still cannot write a read-only filesystem.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from webgather.errors import StoreError

__all__ = ["prepare_out_dir"]


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
