"""Page hooks: user code that sees each parsed HTML page, extracts items and adds or drops links.

``on_page(page)`` is called once per HTML page the crawl parsed (a 2xx ``text/html`` body,
fully received; not for pages whose parse failed) with a :class:`Page`. It yields (or
returns an iterable of) items, plain dicts written one JSON object a line to
``items.jsonl`` in the node's directory (or where ``[hooks] items`` says: JSON Lines, Parquet
or the API's object, :mod:`webgather.runtime.engine.item_sinks`) with the page's URL added as ``page_url`` (an item
that sets ``page_url`` itself keeps its own), and :class:`Link` objects: more URLs to follow,
through the same scope check and router as the page's own links, at the page's depth + 1.
``on_link(url) -> bool`` sees every URL the crawl would newly follow from a fetched page
(its links that scope lets in and this node has not routed before, a redirect's target,
a sitemap's URLs, the hook's own links); False drops it. Seeds are not filtered.

No second parse: a page small enough to be parsed on the event loop (the common case,
:mod:`webgather.runtime.engine.parse_pool`) hands the hook the very lexbor tree its links were
read from. A page parsed in a parser process (over ``parse.inline_max_tags`` tags or
``parse.inline_max_bytes`` bytes) comes with ``tree`` None: a tree does not pickle, and
parsing such a page again on the loop is what the pool exists to prevent (lexbor's time
grows with the square of the nesting depth: minutes, with every fetch frozen). Those pages
are counted (summary ``hooks.pages_without_tree``); a hook may still read ``page.text``.

A hook that raises, yields something that is neither a dict nor a :class:`Link`, an item
that is not JSON, or a link that is not an http(s) URL, makes the page's crawl-log entry
carry error ``hook_error`` (``detail``: the exception) and the page gives no items and no
hook links (a page's output is all or nothing); its own links are still followed. An
``on_link`` that raises keeps that page's URLs (the crawl's default) and records
``hook_error`` likewise. Hooks run on the event loop: a slow hook slows the crawl.

Items are written before the page completes: a crash between the two fetches the page
again after a resume, so an item may appear twice (at least once, never lost; Parquet
keeps a batch in memory first: what a kill loses there is in :mod:`webgather.runtime.engine.item_sinks`).
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from webgather.config import CrawlConfig
from webgather.errors import ConfigError
from webgather.fetch.model import FetchResult, first_header
from webgather.frontier.model import CrawlItem
from webgather.outcome import Decision
from webgather.parse.charset import decode_html
from webgather.parse.links import Link as PageLink
from webgather.parse.links import ParsedPage
from webgather.runtime.engine.item_sinks import ITEMS_FILE, ItemSink, ItemStore, JsonLinesItems, open_items
from webgather.runtime.engine.pipeline import Extracted, make_items
from webgather.scope import Scope
from webgather.urls import fingerprint, resolve_link

__all__ = ["HOOK_ERROR", "ITEMS_FILE", "ItemSink", "HookFunctions", "Link", "Page", "PageHooks", "hook_functions", "load_hooks"]

log = logging.getLogger(__name__)

HOOK_ERROR = "hook_error"
"""Crawl-log error kind: a page hook raised or gave something unusable (module docstring)."""


@dataclass(frozen=True, slots=True)
class Link:
    """Yield one from ``on_page`` to follow ``url`` (absolute, or relative to the page's base URL)."""

    url: str


class Page:
    """One parsed HTML page, as ``on_page`` sees it. Read-only; built once per page, cheaply
    (``text`` is decoded on first use)."""

    __slots__ = ("_parsed", "_result", "_text", "depth", "tree", "url")

    def __init__(self, item: CrawlItem, result: FetchResult, parsed: ParsedPage,
                 tree: LexborHTMLParser | None) -> None:
        self.url = item.url
        """The page's canonical URL."""
        self.depth = item.depth
        """Link hops from a seed."""
        self.tree = tree
        """The lexbor tree the crawl parsed (selectolax ``LexborHTMLParser``), or None for a page
        parsed in a parser process (module docstring). In a re-crawl cycle it has lost its
        script, style, noscript and template elements (the visible-text pass strips them)."""
        self._result, self._parsed = result, parsed
        self._text: str | None = None

    @property
    def status(self) -> int:
        """The HTTP status (a 2xx)."""
        return self._result.status or 0

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        """The response headers, ``(name, value)`` pairs in the order received."""
        return tuple(self._result.response_headers)

    def header(self, name: str) -> str | None:
        """The first response header ``name`` (case-insensitive), or None."""
        return first_header(self._result.response_headers, name)

    @property
    def body(self) -> bytes:
        """The payload bytes (content coding removed)."""
        return self._result.body

    @property
    def text(self) -> str:
        """The body decoded to a str (charset from the header, BOM or meta, as the parser read it)."""
        text = self._text
        if text is None:
            text = self._text = decode_html(self._result.body, self._result.header("Content-Type"))[0]
        return text

    @property
    def title(self) -> str:
        """The ``<title>``, whitespace collapsed ("" if none)."""
        return self._parsed.title

    @property
    def links(self) -> tuple[PageLink, ...]:
        """Every link of the page in document order (``url``, ``anchor``, ``nofollow``, ``tag``),
        nofollow ones included; ``url`` is canonical and absolute."""
        return self._parsed.links

    @property
    def base_url(self) -> str:
        """The URL relative links resolve against (``<base href>``, else the page URL)."""
        return self._parsed.base


OnPage = Callable[[Page], Iterable[object] | None]
OnLink = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class HookFunctions:
    """The user's hooks (either may be None), and (Python API) the object their items go to."""

    on_page: OnPage | None = None
    on_link: OnLink | None = None
    items: ItemSink | None = None
    """None: the ``hooks.items`` file (:mod:`webgather.runtime.engine.item_sinks`)."""


def load_hooks(module: str) -> HookFunctions:
    """The ``on_page`` / ``on_link`` of the module named ``module`` (``pkg.mod``); :class:`ConfigError`
    (one line) if it cannot be imported, defines neither, or defines one that is not callable."""
    try:
        found = importlib.import_module(module)
    except Exception as exc:  # the user's module: any error in it is theirs, reported in one line
        raise ConfigError(f"hooks module {module!r} cannot be imported: {type(exc).__name__}: {exc} "
                          "(it must be importable by this Python: is its directory on PYTHONPATH?)") from None
    on_page, on_link = getattr(found, "on_page", None), getattr(found, "on_link", None)
    if on_page is None and on_link is None:
        raise ConfigError(f"hooks module {module!r} defines neither on_page nor on_link")
    for name, value in (("on_page", on_page), ("on_link", on_link)):
        if value is not None and not callable(value):
            raise ConfigError(f"hooks module {module!r}: {name} is a {type(value).__name__}, not a function")
    return HookFunctions(on_page, on_link)


def hook_functions(config: CrawlConfig, given: HookFunctions | None) -> HookFunctions | None:
    """The crawl's hooks: ``given`` (the Python API's), else the module of ``config.hooks``, else None."""
    functions = given is not None and (given.on_page is not None or given.on_link is not None)
    if functions and config.hooks.module:
        raise ConfigError("hooks given twice: as functions and as the module setting hooks; give one")
    if functions:
        return given
    if not config.hooks.module:
        return None
    return replace(load_hooks(config.hooks.module), items=given.items if given is not None else None)


class _HookFailed(Exception):
    """What the user's hook did wrong, in one line (never escapes this module)."""


class PageHooks:
    """Runs the hooks of one node on each page and writes its items (``DIR/items.jsonl``, or ``items``)."""

    def __init__(self, functions: HookFunctions, out_dir: Path, items: ItemStore | None = None) -> None:
        self._on_page, self._on_link = functions.on_page, functions.on_link
        self.wants_page = self._on_page is not None
        """Does the run loop keep each parsed page and its tree for this runner?"""
        self.items = items if items is not None else JsonLinesItems(out_dir / ITEMS_FILE)
        self.counts = {"pages": 0, "pages_without_tree": 0, "items": 0, "links_added": 0, "links_dropped": 0,
                       "errors": 0}

    @classmethod
    def of(cls, config: CrawlConfig, given: HookFunctions | None, out_dir: Path,
           node_id: str = "n0") -> PageHooks | None:
        """The node's runner of ``given`` (the Python API's hooks), else of ``config.hooks``'s module; None
        if there are none. :class:`ConfigError` if the module cannot be loaded (:func:`load_hooks`)."""
        functions = hook_functions(config, given)
        if functions is None:
            return None
        return cls(functions, out_dir, open_items(config, out_dir, node_id, functions.items))

    def summary(self) -> dict[str, int | str]:
        """The ``hooks`` section of the node's summary: this run's counts and where the items went."""
        return {**self.counts, "items_file": self.items.location}

    def apply(self, item: CrawlItem, result: FetchResult, decision: Decision, extracted: Extracted,
              scope: Scope) -> tuple[Decision, str | None]:
        """Run the hooks on one fetched page: items written, ``extracted.items`` extended by the hook's
        links and filtered by ``on_link``. Returns the page's decision (error ``hook_error`` if a hook
        failed) and the failure's one-line detail. Raises only :class:`WriteFailed` (items not stored)."""
        failure: str | None = None
        parsed, tree = extracted.page, extracted.tree
        # let go of the tree now: the page still awaits its writes, and a lexbor tree held by each of
        # fetch.concurrency pages in flight tripled a node's peak RSS (69 -> 220 MiB on the node_ab web)
        extracted.page = extracted.tree = None
        if self._on_page is not None and parsed is not None:
            try:
                lines, links = self._run_on_page(item, result, parsed, tree)
            except _HookFailed as exc:
                failure = str(exc)
            else:
                self._store(lines)
                added = make_items(links, scope)
                self.counts["links_added"] += len(added)
                extracted.items.extend(added)
        if self._on_link is not None and extracted.items:
            extracted.items, failed = self.keep_links(extracted.items)
            failure = failed or failure
        if failure is None:
            return decision, None
        return self.failed(item, decision, failure)

    def failed(self, item: CrawlItem, decision: Decision, failure: str) -> tuple[Decision, str]:
        """Count and log a hook's failure on ``item``: its decision with error ``hook_error``, and the detail."""
        self.counts["errors"] += 1
        log.warning("%s: %s: %s", item.url, HOOK_ERROR, failure)
        return replace(decision, error=HOOK_ERROR), failure[:300]

    def _run_on_page(self, item: CrawlItem, result: FetchResult, parsed: ParsedPage,
                     tree: LexborHTMLParser | None) -> tuple[list[_Item], list[CrawlItem]]:
        assert self._on_page is not None
        self.counts["pages"] += 1
        self.counts["pages_without_tree"] += tree is None
        try:
            produced = self._on_page(Page(item, result, parsed, tree))
            outputs = list(produced) if produced is not None else []
        except Exception as exc:  # the user's code: recorded against the page, never the crawl's end
            raise _HookFailed(f"on_page raised {type(exc).__name__}: {exc}") from None
        lines: list[_Item] = []
        links: list[CrawlItem] = []
        for out in outputs:
            if isinstance(out, Link):
                links.append(_link_item(out, parsed.base, item.depth + 1))
            elif isinstance(out, Mapping):
                lines.append(_item_line(out, item.url))
            else:
                raise _HookFailed(f"on_page yielded a {type(out).__name__}: yield dicts (items) or Link(url)")
        return lines, links

    def keep_links(self, items: list[CrawlItem]) -> tuple[list[CrawlItem], str | None]:
        """The ``items`` ``on_link`` keeps (all without one); if it raises, all of them and the
        one-line failure (the caller records it: :meth:`failed`)."""
        keep = self._on_link
        if keep is None:
            return items, None
        try:
            kept = [new for new in items if keep(new.url)]
        except Exception as exc:  # the user's code: the page's URLs are kept, the failure recorded
            return items, f"on_link raised {type(exc).__name__}: {exc}"
        self.counts["links_dropped"] += len(items) - len(kept)
        return kept, None

    def _store(self, items: list[_Item]) -> None:
        if not items:
            return
        self.items.put([record for record, _line in items], [line for _record, line in items])
        self.counts["items"] += len(items)

    def close(self) -> None:
        """Close the item store (Parquet: write what waits; :class:`WriteFailed` if it cannot)."""
        self.items.close()


_Item = tuple[dict[str, Any], bytes]
"""One item: the dict handed to a Parquet or object store, and its JSON line."""


def _item_line(item: Mapping[object, object], page_url: str) -> _Item:
    record: dict[Any, Any] = {"page_url": page_url, **item}
    try:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError (a lone surrogate) is a ValueError
        raise _HookFailed(f"on_page yielded an item that is not JSON: {exc}") from None
    try:
        line = text.encode("utf-8") + b"\n"
    except UnicodeEncodeError as exc:
        raise _HookFailed(f"on_page yielded an item that is not JSON: {exc}") from None
    if not all(isinstance(key, str) for key in record):  # JSON made them strings: so do the other stores
        record = json.loads(text)
    return record, line


def _link_item(link: Link, base: str, depth: int) -> CrawlItem:
    url = resolve_link(base, link.url) if isinstance(link.url, str) else None
    if url is None:
        raise _HookFailed(f"on_page yielded {link!r}: not an http(s) URL")
    return CrawlItem(url, fingerprint(url), depth=depth, priority=float(depth))
