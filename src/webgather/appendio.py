"""Appends that land whole or not at all, for every append-only file of a node.

A write on a full disk (ENOSPC, EDQUOT) or a failing one (EIO) may put part of
its bytes in the file before it fails. Left there, the piece sits in the middle
of the file once a retry (the next flush, the close, a resumed crawl) appends
after it: a torn log line or journal record that resume reads as corruption.
So the file is cut back to its size before the write, and the caller keeps
what it meant to write.

A writer that appends a record per page (the frontier journal, the WARC and its
index) passes the size it keeps itself (``size``): asking the OS with an
``fstat`` per write cost a syscall each, which also hands the GIL to the other
thread and waits to get it back.
"""

from __future__ import annotations

import contextlib
import os

from webgather.errors import WriteFailed

__all__ = ["append_bytes"]


def append_bytes(fd: int, data: bytes, what: str, size: int = -1) -> int:
    """Append ``data`` to the file ``fd`` (one owner) whole, or raise :class:`WriteFailed`
    (``what``: "cannot write crawl log PATH") with the file as it was before.
    ``size``: the file's size as its owner keeps it (``-1``: ask the OS).
    Returns the file's size before the write (where ``data`` starts)."""
    try:
        if size < 0:
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
