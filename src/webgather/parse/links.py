"""Links, canonical URL, meta robots, title and visible text of an HTML page. Pure.

One pass of lexbor (a C HTML5 parser, through selectolax) builds the tree as a
browser would, and one CSS selector list picks every element we care about in
document order, so the per-page Python work is one small loop over those
elements. Which links count (docs/contracts.md, step 6):

* ``a[href]``, ``area[href]``, ``frame[src]``, ``iframe[src]``;
* ``meta[http-equiv=refresh]`` with a URL other than the page's own (tag ``meta``,
  first in the list: :mod:`webgather.parse.refresh`);
* ``link[href]`` whose ``rel`` has ``alternate``, ``next`` or ``prev`` and
  neither ``stylesheet`` nor ``icon`` (``rel=canonical`` goes to
  :attr:`ParsedPage.canonical` instead);
* each resolved against the first ``<base href>`` of the document (itself
  resolved against the page URL, ignored unless it gives an http(s) URL),
  else the page URL, by :func:`webgather.urls.resolve_link`; hrefs that do
  not give a canonical http(s) URL (``javascript:``, ``mailto:``, invalid) are
  dropped. Duplicates are kept, in document order.

``rel`` is a token list ("nofollow noopener"); ``<meta name="robots">``
content is a comma list (``none`` = ``noindex, nofollow``). Garbage in gives a
best-effort page out, never an exception: lexbor repairs any byte string the
way a browser does, and invalid UTF-8 becomes U+FFFD.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from webgather.parse import native
from webgather.parse.charset import decode_html, sniff_encoding
from webgather.parse.refresh import meta_refresh_hrefs, refresh_target
from webgather.parse.requisites import Requisite, page_requisites
from webgather.urls import canonicalize, join, resolve_link

__all__ = [
    "MAX_ANCHOR_CHARS",
    "MAX_LINKS",
    "MAX_TEXT_CHARS",
    "MAX_TITLE_CHARS",
    "Link",
    "ParsedPage",
    "followable",
    "parse_page",
    "parse_page_tree",
]

MAX_ANCHOR_CHARS = 200
"""Anchor text kept per link, after whitespace is collapsed."""
MAX_TITLE_CHARS = 1000
MAX_TEXT_CHARS = 100_000
"""Visible text kept per page (for near-duplicate detection)."""
MAX_LINKS = 20_000
"""Link elements read per page; past this a page is a link farm (``links_truncated``)."""

_SELECTOR = (
    "a[href], area[href], link[href], frame[src], iframe[src], base[href], meta[name], title"
)
_LINK_RELS = frozenset({"alternate", "next", "prev"})
_STYLE_RELS = frozenset({"stylesheet", "icon"})
_INVISIBLE = ["script", "style", "noscript", "template"]
_ROBOTS_NAMES = ("robots",)


class Link(NamedTuple):
    """One out-link occurrence. A named tuple: cheap to build at 25 per page."""

    url: str
    """Canonical absolute URL."""
    anchor: str
    """Anchor text (``a``: its text, else the ``alt`` of an image in it; ``area``: ``alt``)."""
    nofollow: bool
    """The element's ``rel`` has ``nofollow``."""
    tag: str
    """``a``, ``area``, ``link``, ``frame``, ``iframe``, ``meta`` (a meta refresh) or ``refresh`` (the header)."""


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What one HTML page says about the web around it."""

    url: str
    """The page URL as given."""
    links: tuple[Link, ...]
    canonical: str | None
    """``<link rel=canonical>`` (first one), resolved and canonical, or None."""
    meta_nofollow: bool
    meta_noindex: bool
    base: str
    """The URL relative links were resolved against."""
    charset: str
    """Python codec name the body was decoded with (see :mod:`webgather.parse.charset`)."""
    title: str = ""
    text: str = ""
    """Visible body text (no script/style/noscript/template): text nodes stripped and
    joined by one space, at most ``max_text_chars``; "" with ``want_text=False``."""
    links_truncated: bool = False
    """More than ``max_links`` link elements: the rest were not read."""
    error: str | None = None
    """Set (and the page empty) only if the HTML parser itself failed."""
    requisites: tuple[Requisite, ...] = ()
    """(URL, where found) of what the page needs to be shown (:mod:`webgather.parse.requisites`);
    empty unless asked for (``want_requisites``)."""
    cut_at: int | None = None
    """Set when only the body's first ``cut_at`` bytes were parsed (a page over ``parse.max_bytes`` or
    ``parse.max_tags``: :mod:`webgather.parse.html_bound`); what came after them was not read."""


class _Raw(NamedTuple):
    href: str
    anchor: str
    nofollow: bool
    tag: str


def followable(page: ParsedPage) -> list[Link]:
    """Links a crawl follows: none under ``meta robots nofollow``, else those without ``rel=nofollow``."""
    if page.meta_nofollow:
        return []
    return [link for link in page.links if not link.nofollow]


def parse_page(
    url: str,
    body: bytes,
    content_type_header: str | None = None,
    *,
    want_text: bool = True,
    max_links: int = MAX_LINKS,
    max_text_chars: int = MAX_TEXT_CHARS,
    robots_meta_names: tuple[str, ...] = _ROBOTS_NAMES,
    want_requisites: bool = False,
) -> ParsedPage:
    """Parse an HTML body fetched from ``url``. Never raises on any ``body``.

    ``want_text=False`` skips the visible-text pass (about a third of the time).
    ``robots_meta_names`` are the lower-case ``<meta name>`` values obeyed as
    robots directives (add the crawler's product token to honour its own). ``want_requisites``:
    fill :attr:`ParsedPage.requisites`.
    """
    return parse_page_tree(url, body, content_type_header, want_text=want_text, max_links=max_links,
                           max_text_chars=max_text_chars, robots_meta_names=robots_meta_names,
                           want_requisites=want_requisites)[0]


def parse_page_tree(
    url: str,
    body: bytes,
    content_type_header: str | None = None,
    *,
    want_text: bool = True,
    max_links: int = MAX_LINKS,
    max_text_chars: int = MAX_TEXT_CHARS,
    robots_meta_names: tuple[str, ...] = _ROBOTS_NAMES,
    want_requisites: bool = False,
) -> tuple[ParsedPage, LexborHTMLParser | None]:
    """:func:`parse_page`, and the lexbor tree it built (None if the parser failed), for a
    caller that reads more of the page (a crawl's ``on_page`` hook) without a second parse.
    With ``want_text`` the tree has lost its script, style, noscript and template elements."""
    source, charset = _source(body, content_type_header)
    try:
        tree = LexborHTMLParser(source)
        scan = _scan(tree, robots_meta_names, max_links)
    except (SelectolaxError, ValueError, MemoryError) as exc:
        return ParsedPage(url, (), None, False, False, url, charset, error=f"parse: {exc}"), None
    base = _base_url(url, scan.base_href)
    links = _refresh_links(tree, url, base) + _resolve_all(base, scan.raw)
    truncated = scan.truncated
    canonical = resolve_link(base, scan.canonical_href) if scan.canonical_href else None
    requisites = page_requisites(tree, base) if want_requisites else ()  # before the text pass strips <style>
    text = _visible_text(tree, max_text_chars) if want_text else ""
    return ParsedPage(
        url, links, canonical, scan.nofollow, scan.noindex, base, charset,
        scan.title or "", text, truncated, requisites=requisites,
    ), tree  # fmt: skip


def _scan(tree: LexborHTMLParser, robots_meta_names: tuple[str, ...], max_links: int) -> _Scan:
    """What the page's elements say: by the C walk (webgather._pagescan) when loaded."""
    scan = _Scan(robots_meta_names)
    scanner = native.scanner()
    if scanner is None:
        scan.truncated = scan.read(tree.css(_SELECTOR), max_links)
        return scan
    raws, scan.base_href, scan.canonical_href, scan.title, scan.nofollow, scan.noindex, scan.truncated = (
        scanner.scan(tree, robots_meta_names, max_links, MAX_ANCHOR_CHARS, MAX_TITLE_CHARS))
    scan.raw = raws  # plain (href, anchor, nofollow, tag) tuples: _resolve_all unpacks or reads them alike
    return scan


def _refresh_links(tree: LexborHTMLParser, url: str, base: str) -> tuple[Link, ...]:
    """``<meta http-equiv=refresh>`` targets as links (tag ``meta``), first: a browser goes there."""
    targets = (refresh_target(url, base, content) for content in meta_refresh_hrefs(tree))
    return tuple(Link(target, "", False, "meta") for target in targets if target is not None)


def _source(body: bytes, content_type_header: str | None) -> tuple[bytes | str, str]:
    """What to hand lexbor: UTF-8 bytes as they are (it decodes them), else decoded text."""
    codec, bom_length = sniff_encoding(body, content_type_header)
    if codec == "utf-8":
        return body[bom_length:] if bom_length else body, codec
    return decode_html(body, content_type_header)


def _resolve_all(base: str, raws: list[_Raw]) -> tuple[Link, ...]:
    core = native.core()
    if core is not None:  # the same loop in C (webgather/_urlcore.c): ~1/3 of a page's CPU
        links: tuple[Link, ...] = core.resolve_all(base, raws, Link)
        return links
    return _resolve_all_python(base, raws)


def _resolve_all_python(base: str, raws: list[_Raw]) -> tuple[Link, ...]:
    resolved: dict[str, str | None] = {}  # pages repeat hrefs (menus): join each once
    links = []
    for href, anchor, nofollow, tag in raws:
        if href in resolved:
            target = resolved[href]
        else:
            # canonicalize(): an absolute href still counts if the page URL is not one
            target = resolved[href] = resolve_link(base, href) or canonicalize(href)
        if target is not None:
            links.append(Link(target, anchor, nofollow, tag))
    return tuple(links)


def _base_url(url: str, base_href: str | None) -> str:
    if base_href is None:
        return url
    base = join(url, base_href)
    if base is None or not base.startswith(("http://", "https://")):
        return url
    return base


def _collapse(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


class _Scan:
    """Accumulates what the selected elements say, in one pass."""

    __slots__ = ("base_href", "canonical_href", "names", "nofollow", "noindex", "raw", "title", "truncated")

    def __init__(self, robots_meta_names: tuple[str, ...]) -> None:
        self.names = robots_meta_names
        self.raw: list[_Raw] = []
        self.base_href: str | None = None
        self.canonical_href: str | None = None
        self.title: str | None = None
        self.nofollow = False
        self.noindex = False
        self.truncated = False

    def read(self, nodes: list[LexborNode], max_links: int) -> bool:
        """Read ``nodes``; True when link elements past ``max_links`` were skipped."""
        raw = self.raw
        for node in nodes:
            tag = node.tag
            attrs = node.attributes
            if tag == "a":
                href, rel = attrs["href"], attrs.get("rel")
                raw.append(_Raw(href or "", _anchor(node), _has_nofollow(rel), tag))
            elif tag == "link":
                self._link(attrs)
            elif tag == "area":
                alt = _collapse(attrs.get("alt") or "", MAX_ANCHOR_CHARS)
                raw.append(_Raw(attrs["href"] or "", alt, _has_nofollow(attrs.get("rel")), tag))
            elif tag == "iframe" or tag == "frame":
                raw.append(_Raw(attrs["src"] or "", "", False, tag))
            else:
                self._other(tag, node, attrs)
            if len(raw) > max_links:
                del raw[max_links:]
                return True
        return False

    def _link(self, attrs: dict[str, str | None]) -> None:
        rels = set((attrs.get("rel") or "").lower().split())
        href = attrs["href"] or ""
        if "canonical" in rels and self.canonical_href is None:
            self.canonical_href = href
        if rels & _LINK_RELS and not rels & _STYLE_RELS:
            self.raw.append(_Raw(href, "", "nofollow" in rels, "link"))

    def _other(self, tag: str | None, node: LexborNode, attrs: dict[str, str | None]) -> None:
        if tag == "base":
            if self.base_href is None:
                self.base_href = attrs["href"] or ""
        elif tag == "meta":
            name = (attrs.get("name") or "").strip().lower()
            if name in self.names:
                tokens = set((attrs.get("content") or "").lower().replace(",", " ").split())
                none = "none" in tokens
                self.nofollow = self.nofollow or none or "nofollow" in tokens
                self.noindex = self.noindex or none or "noindex" in tokens
        elif tag == "title" and self.title is None:
            self.title = _collapse(node.text(), MAX_TITLE_CHARS)


def _has_nofollow(rel: str | None) -> bool:
    return rel is not None and "nofollow" in rel.lower().split()


def _anchor(node: LexborNode) -> str:
    text = _collapse(node.text(), MAX_ANCHOR_CHARS)
    if text:
        return text
    image = node.css_first("img[alt]")
    return _collapse(image.attributes.get("alt") or "", MAX_ANCHOR_CHARS) if image else ""


def _visible_text(tree: LexborHTMLParser, max_chars: int) -> str:
    body = tree.body
    if body is None:
        return ""
    tree.strip_tags(_INVISIBLE)
    # Text nodes stripped and joined by one space: a full split/join collapse
    # would cost ~10x the whole text pass (~150 us on a 13 KB page).
    return body.text(separator=" ", strip=True, skip_empty=True)[:max_chars]
