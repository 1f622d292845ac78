"""Appends that land whole or not at all, for every append-only file of a node.

A write on a full disk (ENOSPC, EDQUOT) or a failing one (EIO) may put part of
its bytes in the file before it fails. Left there, the piece sits in the middle
of the file once a retry (the next flush, the close, a resumed crawl) appends
after it: a torn log line or journal record that resume reads as corruption.
So the file is cut back to its size before the write, and the caller keeps
what it meant to write.
"""

from __future__ import annotations

import contextlib
import os

from webgather.errors import WriteFailed

__all__ = ["append_bytes"]


def append_bytes(fd: int, data: bytes, what: str) -> int:
    """Append ``data`` to the file ``fd`` (one owner) whole, or raise :class:`WriteFailed`
    (``what``: "cannot write crawl log PATH") with the file as it was before.
    Returns the file's size before the write (where ``data`` starts)."""
    size = -1
    try:
        size = os.fstat(fd).st_size
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        if size >= 0:
            with contextlib.suppress(OSError):  # the write's own error is the one to report
                os.ftruncate(fd, size)
        raise WriteFailed.from_os(what, exc) from exc
    return size
