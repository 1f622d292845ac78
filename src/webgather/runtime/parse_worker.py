"""The parser process of :mod:`webgather.runtime.parse_pool`: a loop over stdin/stdout.

Frames both ways are an 8-byte big-endian length and a pickle (the parent is the only
peer; it wrote the program). A request is ``("page", (url, body, content_type, want_text,
want_requisites))`` or ``("sitemap", (body,))``, the reply the :class:`~webgather.parse.links.ParsedPage` or
:class:`~webgather.parse.sitemap.SitemapDoc`. The process starts by writing one
ready byte (after its imports, so start-up time never counts against a page's deadline).

It outlives nothing: it ends at end of input (the node closed the pipe, or died), and
before each parse it arms ``SIGALRM`` with its default action, so a parse still running
``alarm_s`` later ends the process in the kernel even if lexbor never returns to Python
and the node is gone (kill -9). SIGINT and SIGTERM are ignored: a Ctrl-C reaches the
whole process group, and the node, not the signal, decides when its parsers stop.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from typing import BinaryIO

from webgather.parse.links import ParsedPage, parse_page
from webgather.parse.sitemap import SitemapDoc, parse_sitemap

__all__ = ["HEADER", "main"]

HEADER = struct.Struct("!Q")


def main(argv: list[str]) -> int:
    """``argv``: ``[alarm_s, cpus]`` (cpus comma-separated, "" to leave the mask alone)."""
    alarm_s = float(argv[0])
    if argv[1] and hasattr(os, "sched_setaffinity"):
        # undo the node's pin (inherited from the loop thread): this process is what
        # may use the other cores
        os.sched_setaffinity(0, {int(cpu) for cpu in argv[1].split(",")})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sink.write(b"R")
    sink.flush()
    while (request := _read_frame(source)) is not None:
        kind, args = pickle.loads(request)
        signal.setitimer(signal.ITIMER_REAL, alarm_s)
        if kind == "page":
            doc: ParsedPage | SitemapDoc = parse_page(*args[:3], want_text=args[3], want_requisites=args[4])
        else:
            doc = parse_sitemap(args[0])
        signal.setitimer(signal.ITIMER_REAL, 0)
        reply = pickle.dumps(doc, pickle.HIGHEST_PROTOCOL)
        sink.write(HEADER.pack(len(reply)) + reply)
        sink.flush()
    return 0


def _read_frame(source: BinaryIO) -> bytes | None:
    header = source.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    payload = source.read(length)
    return payload if len(payload) == length else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
