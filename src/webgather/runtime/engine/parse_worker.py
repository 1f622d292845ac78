"""The parser process of :mod:`webgather.runtime.engine.parse_pool`: a loop over stdin/stdout.

Frames both ways are an 8-byte big-endian length and their bytes. A request is two frames: a pickle
(the parent is the only peer; it wrote the program) of ``("page", (url, content_type, want_text,
want_requisites))`` or ``("sitemap", (max_urls,))``, then the document's body as it is (a pickle of it
would be one more copy of up to 50 MB on each side); the reply is one frame, a pickle of the
:class:`~webgather.parse.links.ParsedPage` or :class:`~webgather.parse.sitemap.SitemapDoc`, or of a
string saying why there is none. The process
starts by writing one ready byte (after its imports, so start-up time never counts against a page's deadline).

It outlives nothing: it ends at end of input (the node closed the pipe, or died), and
before each parse it arms ``SIGPROF`` (``cpu_s`` of the process's CPU: the parse's deadline,
``parse.max_seconds``) and ``SIGALRM`` (``alarm_s`` of wall time, a backstop) with their default
action, so a parse past either ends the process in the kernel even if lexbor never returns to
Python and the node is gone (kill -9). Counting CPU, not wall time, a parse is not charged for
the time the node's loop took to send it or read its answer, nor for the cores it shares. SIGINT and SIGTERM are ignored: a Ctrl-C reaches the
whole process group, and the node, not the signal, decides when its parsers stop. Its data memory is
limited (``RLIMIT_DATA``, ``parse.max_memory``): a parse that needs more is answered with a string, why
(lexbor fails cleanly when an allocation does), and the process goes on to the next.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import resource
import signal
import struct
import sys
from collections.abc import Callable
from typing import BinaryIO

from webgather.parse.links import ParsedPage, parse_page
from webgather.parse.sitemap import SitemapDoc, parse_sitemap

__all__ = ["HEADER", "TRIM_AFTER_BYTES", "main"]

HEADER = struct.Struct("!Q")
TRIM_AFTER_BYTES = 1024 * 1024
"""After a body this large, once its reply is sent, the process gives its free heap back to the system
(glibc's ``malloc_trim``): lexbor's tree of an 8 MB page left 190 MB resident, 50 MB after a trim (68 ms)."""


def main(argv: list[str]) -> int:
    """``argv``: ``[alarm_s, cpus, cpu_s, max_memory]`` (cpus comma-separated, "" to leave the mask alone; cpu_s:
    the CPU seconds a parse may take, ended by SIGPROF; alarm_s: the wall-time backstop, SIGALRM;
    max_memory: the process's RLIMIT_DATA in bytes)."""
    alarm_s, cpu_s = float(argv[0]), float(argv[2])
    _limit_memory(int(argv[3]))
    if argv[1] and hasattr(os, "sched_setaffinity"):
        # undo the node's pin (inherited from the loop thread): this process is what
        # may use the other cores
        os.sched_setaffinity(0, {int(cpu) for cpu in argv[1].split(",")})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    source, sink, trim = sys.stdin.buffer, sys.stdout.buffer, _malloc_trim()
    sink.write(b"R")
    sink.flush()
    while (request := _read_frame(source)) is not None and (body := _read_frame(source)) is not None:
        signal.setitimer(signal.ITIMER_PROF, cpu_s)  # the parse's own CPU: its deadline
        signal.setitimer(signal.ITIMER_REAL, alarm_s)  # a backstop in wall time, should the node be gone
        doc = _outcome(request, body)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        reply = pickle.dumps(doc, pickle.HIGHEST_PROTOCOL)
        sink.write(HEADER.pack(len(reply)) + reply)
        sink.flush()
        size = len(body)
        del body, doc, reply  # before the trim: what they held is free heap
        if size > TRIM_AFTER_BYTES and trim is not None:
            trim(0)
    return 0


def _outcome(request: bytes, body: bytes) -> ParsedPage | SitemapDoc | str:
    """The parsed document, or why there is none: lexbor's own failure (a page's ``error``; under the
    memory limit, lexbor fails cleanly when an allocation does) or Python's ``MemoryError``."""
    try:
        doc = _parse(request, body)
    except MemoryError:
        return "out of memory (parse.max_memory)"
    if isinstance(doc, ParsedPage) and doc.error is not None:
        return f"{doc.error} (parse.max_memory?)"
    return doc


def _parse(request: bytes, body: bytes) -> ParsedPage | SitemapDoc:
    kind, args = pickle.loads(request)
    if kind == "page":
        url, content_type, want_text, want_requisites = args
        return parse_page(url, body, content_type, want_text=want_text, want_requisites=want_requisites)
    return parse_sitemap(body, max_urls=args[0])


def _limit_memory(limit: int) -> None:
    """Lower the process's soft RLIMIT_DATA (heap and private mappings) to ``limit``, never above its hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft == resource.RLIM_INFINITY or soft > limit:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None elsewhere (looked up in the process itself: ``find_library`` would run
    ``ldconfig``)."""
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    return trim


def _read_frame(source: BinaryIO) -> bytes | None:
    header = source.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    payload = source.read(length)
    return payload if len(payload) == length else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
