"""HTML parsing with a deadline, off the event loop for any page that could be slow.

Why: lexbor's time grows with the square of the tag-nesting depth (``<div>`` x 40,000:
2 s; x 500,000, a 5.5 MB page: many minutes) and it holds the GIL, so a page parsed on
the event loop froze fetching, flushing and signal handling alike (issue 13). A thread
cannot be stopped in the middle of a C call; a process can be killed.

The choice (measured on the 2-core development machine, shared, medians):

* A pre-scan on the loop, :func:`parse_inline`, counts the ``<`` bytes (one C-speed pass,
  about 2 ms on 5.5 MB, microseconds on an ordinary page). A page with at most
  ``parse.inline_max_tags`` of them and at most ``parse.inline_max_bytes`` bytes is parsed
  inline, as before: no copy, no hand-off. The bound holds for every shape because every
  element costs at least one ``<``: the worst shapes measured at 2,000 tags (deep
  ``<div>``, ``<ul><li>`` and ``<div><a>`` nesting, ``<a><b>`` misnesting, ``<table>``
  foster-parenting) took 5-25 ms for the whole ``parse_page``.
* Any other page goes to a parser process (:mod:`webgather.runtime.engine.parse_worker`) over
  pipes the loop reads and writes without blocking. One that takes over
  ``parse.max_seconds`` of CPU in that process ends as :data:`PARSE_TIMEOUT` (its SIGPROF
  timer ends it; the node's own wall-time deadline, :data:`WALL_FACTOR` times longer, is a
  backstop that kills it) and a new one is started for the next such page. ``parse.workers`` processes at most;
  they start on first need, take back the CPUs the node's pin took away
  (:mod:`webgather.runtime.engine.affinity`), and are killed when the node closes. Should the
  node itself be killed, each ends at end of input, or by its own alarm mid-parse.

Memory, which a deadline does not bound (lexbor's tree of a 50 MB page: 1 GB): a page over
``parse.max_bytes`` or ``parse.max_tags`` goes to the process as a prefix within both
(:mod:`webgather.parse.html_bound`; logged :data:`PARSE_TRUNCATED`, its links followed), sent as it
is in :data:`SEND_CHUNK` pieces; each process's data memory is limited to ``parse.max_memory``
(``RLIMIT_DATA``: a parse that passes it is :data:`PARSE_FAILED`, the process lives on) and it gives
its free heap back after a large body (:mod:`webgather.runtime.engine.parse_worker`).

Why not every page to the pool: it costs a pickle and two pipe trips a page, and the
parser process's CPU is not free. On the vs_scrapy web (8,152 pages, bench/node_ab.py,
3 interleaved rounds, machine shared and loaded) ``inline_max_tags = 0`` took 1.59 x
the CPU a page of the hybrid's (2.39 vs 1.20 ms; twice, 2.06 vs 1.13) and fewer pages/s
(211 vs 403); the hybrid was within noise of the code before it (1.50 ms). A page that
needs a worker pays that once; the 2nd core then parses while the loop fetches.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import signal
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from webgather.config import ParseConfig
from selectolax.lexbor import LexborHTMLParser

from webgather.parse.html_bound import html_prefix_length
from webgather.parse.links import ParsedPage, parse_page, parse_page_tree
from webgather.parse.sitemap import MAX_SITEMAP_URLS, SitemapDoc, parse_sitemap
from webgather.runtime.engine.parse_worker import HEADER

__all__ = ["MAX_CHILD_SITEMAPS_PER_HOST", "MAX_SITEMAP_URLS_PER_HOST", "PARSE_FAILED", "PARSE_TIMEOUT", "PARSE_TRUNCATED",
           "ParseFailure", "ParsePool", "parse_inline"]

log = logging.getLogger(__name__)

PARSE_TIMEOUT = "parse_timeout"
"""Crawl-log error kind: the page's parse passed ``parse.max_seconds``."""
PARSE_FAILED = "parse_failed"
"""Crawl-log error kind: the parser process died or could not start (not the deadline), or the parse needed
more than ``parse.max_memory``."""
PARSE_TRUNCATED = "parse_truncated"
"""Crawl-log error kind: the page was parsed from a prefix (``parse.max_bytes``, ``parse.max_tags``); its links
are followed."""
SEND_CHUNK = 1024 * 1024
"""A body goes down the pipe this many bytes at a time, each drained before the next: the node never
holds a second copy of it (a 50 MB page once took 100 MB more: its pickle and the pipe's buffer)."""
MAX_SITEMAP_URLS_PER_HOST = 200_000
"""Locations (pages and child sitemaps) one host's sitemaps may list in all, on one node: four full
sitemaps' worth. Its other pages are still found by their links."""
REAP_WAIT_S = 1.0
"""How long a parser process whose pipe closed is given to be seen ending before it is killed."""
MAX_CHILD_SITEMAPS_PER_HOST = 200
"""Child sitemaps one host's sitemap indexes may list in all, on one node: each is a fetch of up to
50 MB; past the locations' budget they would list nothing (an index of 50,000 had them all fetched)."""
START_TIMEOUT_S = 60.0
"""A parser process that is not ready (imports done) by then counts as failed."""
ALARM_MARGIN_S = 1.0
"""The process's own alarm rings this long after the node's deadline: a backstop."""
WALL_FACTOR = 4.0
"""The node waits ``WALL_FACTOR * parse.max_seconds + ALARM_MARGIN_S`` of wall time for a parse (the pipe
both ways, a loop busy elsewhere, shared cores); the parse itself is held to ``max_seconds`` of CPU by
the parser process (SIGPROF). With the deadline in wall time from the node's side, 5 of 104 sitemaps
that parse in 0.2 s were ``parse_timeout`` in a crawl."""

_SRC_ROOT = str(Path(__file__).resolve().parents[2])  # the tree this module came from
_BOOT = (
    f"import sys; sys.path.insert(0, {_SRC_ROOT!r}); "
    "from webgather.runtime.engine.parse_worker import main; sys.exit(main(sys.argv[1:]))"
)


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """A page that was not parsed: ``kind`` is its crawl-log error kind."""

    kind: str
    detail: str


def _wall_s(cpu_s: float) -> float:
    return WALL_FACTOR * cpu_s + ALARM_MARGIN_S


def parse_inline(body: bytes, config: ParseConfig) -> bool:
    """The pre-scan: is ``body`` small enough in bytes and tags to parse on the loop? Pure."""
    return len(body) <= config.inline_max_bytes and body.count(b"<") <= config.inline_max_tags


class _Worker:
    """One parser process and its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdin is not None and proc.stdout is not None  # both are PIPE
        self._stdin, self._stdout = proc.stdin, proc.stdout

    async def call(self, request: bytes, body: memoryview) -> ParsedPage | SitemapDoc | str:
        """Send ``request`` (its arguments but the body, pickled) and ``body``, each a frame; wait for the reply."""
        self._stdin.write(HEADER.pack(len(request)) + request + HEADER.pack(len(body)))
        for start in range(0, len(body), SEND_CHUNK):
            self._stdin.write(body[start:start + SEND_CHUNK])
            await self._stdin.drain()
        await self._stdin.drain()
        (length,) = HEADER.unpack(await self._stdout.readexactly(HEADER.size))
        page = pickle.loads(await self._stdout.readexactly(length))
        if not isinstance(page, (ParsedPage, SitemapDoc, str)):
            raise pickle.UnpicklingError(f"parser process sent a {type(page).__name__}")
        return page

    async def ready(self) -> None:
        """Wait for the ready byte (the process's imports are done)."""
        await self._stdout.readexactly(1)

    def kill(self) -> None:
        if self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:  # it ended on its own a moment ago
                pass


class ParsePool:
    """Parses HTML pages, inline or in parser processes; see the module docstring."""

    def __init__(self, config: ParseConfig, cpus: frozenset[int] | None = None) -> None:
        """``cpus``: the CPUs the parser processes may use (the node's mask before its pin)."""
        self._config = config
        self._cpus = ",".join(str(cpu) for cpu in sorted(cpus)) if cpus else ""
        self._slots = asyncio.Semaphore(config.workers)
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        self._closed = False
        self._sitemap_left: dict[str, int] = {}
        """Sitemap locations each host may still list (:data:`MAX_SITEMAP_URLS_PER_HOST`)."""
        self._children_left: dict[str, int] = {}
        """Child sitemaps each host's indexes may still list (:data:`MAX_CHILD_SITEMAPS_PER_HOST`)."""
        self.started = 0
        """Parser processes started so far."""

    def pids(self) -> list[int]:
        """Process ids of the parser processes alive now."""
        return [w.proc.pid for w in self._live if w.proc.returncode is None]

    async def parse(self, url: str, body: bytes, content_type: str | None, *,
                    want_text: bool, want_requisites: bool = False) -> ParsedPage | ParseFailure:
        """:func:`webgather.parse.links.parse_page`, bounded by ``parse.max_seconds`` off the loop, and in
        memory by ``parse.max_bytes`` and ``max_tags``: a page over either is parsed from a prefix
        (:mod:`webgather.parse.html_bound`; :attr:`ParsedPage.cut_at` set)."""
        if parse_inline(body, self._config):
            return parse_page(url, body, content_type, want_text=want_text, want_requisites=want_requisites)
        return await self._page_in_worker(url, body, content_type, want_text, want_requisites)

    async def parse_with_tree(
        self, url: str, body: bytes, content_type: str | None, *, want_text: bool, want_requisites: bool = False,
    ) -> tuple[ParsedPage, LexborHTMLParser | None] | ParseFailure:
        """:meth:`parse`, and the tree of a page parsed inline (for ``on_page`` hooks: no second
        parse). A page parsed in a parser process comes without one (None): a tree does not pickle."""
        if parse_inline(body, self._config):
            return parse_page_tree(url, body, content_type, want_text=want_text, want_requisites=want_requisites)
        page = await self._page_in_worker(url, body, content_type, want_text, want_requisites)
        return page if isinstance(page, ParseFailure) else (page, None)

    async def _page_in_worker(self, url: str, body: bytes, content_type: str | None, want_text: bool,
                              want_requisites: bool) -> ParsedPage | ParseFailure:
        cut = html_prefix_length(body, self._config.max_bytes, self._config.max_tags)
        page = await self._in_worker(("page", (url, content_type, want_text, want_requisites)), body, cut)
        if isinstance(page, SitemapDoc):
            raise AssertionError("the parser process answered a page with a sitemap")
        if cut < len(body) and isinstance(page, ParsedPage):
            log.info("%s: parsed its first %d of %d bytes (parse.max_bytes %d, max_tags %d)", url, cut, len(body),
                     self._config.max_bytes, self._config.max_tags)
            return replace(page, cut_at=cut)
        return page

    async def parse_sitemap(self, body: bytes, host: str | None = None) -> SitemapDoc | ParseFailure:
        """:func:`webgather.parse.sitemap.parse_sitemap`, likewise. Its scan is linear, but in
        up to 50 MB after gunzip (1.6 s for a 51 KB gzip of short lines): a gzip body, or
        one over ``parse.inline_max_bytes``, goes to a parser process.

        ``host``'s sitemaps list at most :data:`MAX_SITEMAP_URLS_PER_HOST` locations in all and
        :data:`MAX_CHILD_SITEMAPS_PER_HOST` of them child sitemaps, on this node: past either, the
        rest is not read or dropped (``truncated``). An index of 50,000 sitemaps of 50,000 URLs each
        grew a node's state without bound."""
        left = self._sitemap_left.get(host, MAX_SITEMAP_URLS_PER_HOST) if host is not None else MAX_SITEMAP_URLS
        take = min(MAX_SITEMAP_URLS, left)
        if take <= 0:
            return SitemapDoc(truncated=True)
        if host is not None:
            self._sitemap_left[host] = left - take  # taken before the parse: two of its sitemaps at once share it
        doc: ParsedPage | SitemapDoc | ParseFailure
        if not body.startswith(b"\x1f\x8b") and len(body) <= self._config.inline_max_bytes:
            doc = parse_sitemap(body, max_urls=take)
        else:
            doc = await self._in_worker(("sitemap", (take,)), body, len(body))
        assert not isinstance(doc, ParsedPage)
        if host is not None and isinstance(doc, SitemapDoc):
            doc = self._within_children(host, doc)
        if host is not None:  # what the sitemap did not list goes back to its host
            used = len(doc.urls) + len(doc.sitemaps) if isinstance(doc, SitemapDoc) else 0
            self._sitemap_left[host] += take - used
        return doc

    def _within_children(self, host: str, doc: SitemapDoc) -> SitemapDoc:
        """``doc`` with no more child sitemaps than ``host`` may still list."""
        if not doc.sitemaps:
            return doc
        left = self._children_left.get(host, MAX_CHILD_SITEMAPS_PER_HOST)
        self._children_left[host] = max(0, left - len(doc.sitemaps))
        if len(doc.sitemaps) <= left:
            return doc
        return SitemapDoc(doc.urls, doc.sitemaps[:left], True, doc.invalid)

    async def _in_worker(self, request: tuple[str, tuple[object, ...]], body: bytes, size: int
                         ) -> ParsedPage | SitemapDoc | ParseFailure:
        """``request`` in a parser process, with the first ``size`` bytes of ``body`` sent as they are (not pickled)."""
        async with self._slots:
            worker = self._idle.pop() if self._idle else await self._start()
            if worker is None:
                return ParseFailure(PARSE_FAILED, "parser process did not start")
            return await self._call(worker, pickle.dumps(request, pickle.HIGHEST_PROTOCOL), memoryview(body)[:size])

    async def _call(self, worker: _Worker, request: bytes, body: memoryview) -> ParsedPage | SitemapDoc | ParseFailure:
        limit_s = self._config.max_seconds
        wall_s = _wall_s(limit_s)
        try:
            page = await asyncio.wait_for(worker.call(request, body), wall_s)
        except TimeoutError:
            await self._retire(worker)
            return ParseFailure(PARSE_TIMEOUT, f"no parse within {wall_s:g} s")
        except (OSError, EOFError, asyncio.IncompleteReadError, pickle.UnpicklingError) as exc:
            code = await self._retire(worker, ended=True)
            if code == -signal.SIGPROF:
                return ParseFailure(PARSE_TIMEOUT, f"parse took over {limit_s:g} s of CPU")
            kind = PARSE_TIMEOUT if code == -signal.SIGALRM else PARSE_FAILED
            return ParseFailure(kind, f"parser process ended ({code}): {type(exc).__name__}")
        except BaseException:  # cancelled (the node stops): the parse is abandoned
            worker.kill()
            raise
        self._idle.append(worker)
        return ParseFailure(PARSE_FAILED, page) if isinstance(page, str) else page

    async def _start(self) -> _Worker | None:
        if self._closed:
            return None
        alarm_s = _wall_s(self._config.max_seconds) + ALARM_MARGIN_S
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", _BOOT, repr(alarm_s), self._cpus, repr(self._config.max_seconds),
                str(self._config.max_memory),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            log.warning("cannot start a parser process: %s", exc)
            return None
        worker = _Worker(proc)
        self._live.add(worker)
        self.started += 1
        try:
            await asyncio.wait_for(worker.ready(), START_TIMEOUT_S)
        except (TimeoutError, asyncio.IncompleteReadError) as exc:
            log.warning("parser process %d did not start: %s", proc.pid, type(exc).__name__)
            await self._retire(worker)
            return None
        return worker

    async def _retire(self, worker: _Worker, *, ended: bool = False) -> int | None:
        """Kill and reap ``worker``; ``ended``: its pipe closed, so it is likely dead already: wait for
        its exit status first (a kill would reap it unseen, ``Popen.send_signal`` polls, and lose how it ended)."""
        if ended:
            try:
                code: int | None = await asyncio.wait_for(asyncio.shield(worker.proc.wait()), REAP_WAIT_S)
            except TimeoutError:
                code = None
            if code is not None:
                self._live.discard(worker)
                return code
        worker.kill()
        code = await worker.proc.wait()
        self._live.discard(worker)
        return code

    async def close(self) -> None:
        """Kill every parser process and reap it. Parsing afterwards fails as PARSE_FAILED."""
        self._closed = True
        self._idle.clear()
        for worker in list(self._live):
            worker.kill()
        for worker in list(self._live):
            await worker.proc.wait()
        self._live.clear()
