"""Page requisites: what a browser loads to show a page (Heritrix's "E" hops, wget's
``--page-requisites``). Pure.

From the HTML (one CSS selection over the tree the page's parse built):

* ``img`` src and srcset, ``source`` src and srcset (``picture``, ``video``, ``audio``);
* ``link`` href whose ``rel`` has stylesheet, icon (``shortcut icon``, ``apple-touch-icon``),
  preload, modulepreload or manifest;
* ``script`` src, ``video`` poster and src, ``audio`` src, ``input type=image`` src,
  ``object`` data, ``embed`` src;
* the CSS of ``<style>`` elements and ``style`` attributes.

From CSS (those, and a stylesheet fetched as a requisite): ``@import`` (a string or
``url()``), and every ``url()``, which covers ``@font-face`` sources, backgrounds and
the rest. CSS is read by tinycss2's tokenizer (comments, escapes and strings as a
browser reads them), not by regular expressions. URLs resolve against the page's base
(a stylesheet's: its own URL); ``data:`` and other non-http(s) URLs are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import tinycss2
from selectolax.lexbor import LexborHTMLParser, LexborNode
from tinycss2 import ast

from webgather.parse.charset import label_to_codec
from webgather.urls import resolve_link

__all__ = ["MAX_REQUISITES", "Requisite", "css_urls", "css_urls_whole", "decode_css", "page_requisites", "srcset_urls",
           "stylesheet_requisites"]

MAX_REQUISITES = 2_000
"""Requisites kept per document (a page or a stylesheet)."""

_SELECTOR = ("img, source, link[href], script[src], video, audio, input[type], object[data], embed[src], "
             "style, [style]")
_LINK_RELS = frozenset({"stylesheet", "icon", "apple-touch-icon", "preload", "modulepreload", "manifest"})
_SRC = {"img": ("src",), "source": ("src",), "script": ("src",), "video": ("poster", "src"), "audio": ("src",),
        "object": ("data",), "embed": ("src",)}

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([^\s;\"']+)", re.IGNORECASE)
_AT_CHARSET = re.compile(rb'@charset "([\x21\x23-\x7e]{1,40})";')

_LANDMARKS = re.compile(
    r"""\\.|/\*.*?(?:\*/|\Z)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|(?P<url>(?<![\w\\-])url\()|(?P<imp>@import\b)""",
    re.IGNORECASE | re.DOTALL)
"""Escapes, comments and strings (stepped over, so a ``url(`` inside one is not one), and the two landmarks."""
_STRING_END = {'"': re.compile(r'(?:[^"\\\n]|\\.)*(?:"|\n|\Z)', re.DOTALL),
               "'": re.compile(r"(?:[^'\\\n]|\\.)*(?:'|\n|\Z)", re.DOTALL)}
_PLAIN_URL = re.compile(
    r"""url\([ \t\n]*(?:([^ \t\n"'()\\\x00-\x08\x0b\x0e-\x1f\x7f]+)|"([^"\\\n]*)"|'([^'\\\n]*)')[ \t\n]*\)""",
    re.IGNORECASE)
"""``url(x)``, ``url("x")`` or ``url('x')`` with nothing to unescape: what tinycss2 would read, read directly."""
_MAX_WINDOW = 8192
"""Characters read from a landmark to its end (a longer ``url(`` is not a URL a crawl wants)."""

Requisite = tuple[str, str]
"""(canonical URL, where it was found: the element's tag, or ``css``)."""


def page_requisites(tree: LexborHTMLParser, base: str) -> tuple[Requisite, ...]:
    """The requisites of a parsed page, in document order, each URL once."""
    found: dict[str, str] = {}
    for node in tree.css(_SELECTOR):
        for href, where in _hrefs(node, node.tag or ""):
            url = resolve_link(base, href) if href.strip() else None  # "" is the page itself
            if url is not None and url not in found:
                found[url] = where
        if len(found) >= MAX_REQUISITES:
            break
    return tuple(found.items())[:MAX_REQUISITES]


def stylesheet_requisites(url: str, body: bytes, content_type_header: str | None = None) -> tuple[Requisite, ...]:
    """The requisites of a stylesheet fetched from ``url``: its imports, fonts and images."""
    found: dict[str, str] = {}
    for href in css_urls(decode_css(body, content_type_header)):
        target = resolve_link(url, href)
        if target is not None and target not in found:
            found[target] = "css"
            if len(found) >= MAX_REQUISITES:
                break
    return tuple(found.items())


def decode_css(body: bytes, content_type_header: str | None = None) -> str:
    """A stylesheet's text, decoded as CSS Syntax 3.2 says: BOM, else the header's charset, else
    ``@charset "x";``, else UTF-8; undecodable bytes become U+FFFD."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom):].decode(bom_codec, "replace")
    codec = ""
    if content_type_header:
        found = _HEADER_CHARSET.search(content_type_header)
        codec = label_to_codec(found[1]) or "" if found else ""
    if not codec:
        at = _AT_CHARSET.match(body)
        codec = label_to_codec(at[1].decode("ascii")) or "" if at else ""
        codec = "utf-8" if codec in ("utf-16-le", "utf-16-be") else codec  # as the standard says
    return body.decode(codec or "utf-8", "replace")


def _hrefs(node: LexborNode, tag: str) -> Iterator[tuple[str, str]]:
    """(href, where) of one selected element."""
    attrs = node.attributes
    style = attrs.get("style")
    if style:
        yield from ((href, "css") for href in css_urls(style))
    if tag == "style":
        yield from ((href, "css") for href in css_urls(node.text(deep=True)))
    elif tag == "link":
        if set((attrs.get("rel") or "").lower().split()) & _LINK_RELS:
            yield attrs.get("href") or "", tag
    elif tag == "input":
        if (attrs.get("type") or "").strip().lower() == "image" and attrs.get("src"):
            yield attrs.get("src") or "", tag
    elif tag in _SRC:
        for name in _SRC[tag]:
            value = attrs.get(name)
            if value:
                yield value, tag
        srcset = attrs.get("srcset") if tag in ("img", "source") else None
        if srcset:
            yield from ((href, tag) for href in srcset_urls(srcset))


def srcset_urls(srcset: str) -> list[str]:
    """The URLs of a ``srcset`` ("a.png 1x, b.png 2x"): each candidate's URL, up to its descriptors.
    A URL may hold commas (it ends at whitespace); a candidate is split off at a comma after it."""
    urls: list[str] = []
    rest = srcset
    while True:
        rest = rest.lstrip(" \t\n\f\r,")
        if not rest:
            return urls
        end = 0
        while end < len(rest) and rest[end] not in " \t\n\f\r":
            end += 1
        url = rest[:end]
        if url.endswith(","):
            url = url.rstrip(",")
            rest = rest[end:]
        else:  # descriptors up to the next comma (outside parentheses, which descriptors do not use)
            comma = rest.find(",", end)
            rest = "" if comma < 0 else rest[comma + 1:]
        if url:
            urls.append(url)


def css_urls(text: str) -> list[str]:
    """The URLs a piece of CSS (a stylesheet, a ``<style>``, a ``style`` attribute) loads, in order.

    One regular expression (C speed) steps over comments and strings and stops at each ``url(`` and
    ``@import``; tinycss2 reads the token there. The same URLs as tinycss2 reading the whole text
    (:func:`css_urls_whole`, tests compare them on valid CSS; on garbage, escapes next to a landmark
    can differ), at a fraction of its time: tinycss2's pure-Python
    tokenizer takes ~40-80 ms for a 20 KB stylesheet, which would stall the crawl's event loop."""
    urls = []
    end = 0
    for found in _LANDMARKS.finditer(text):
        start = found.start()
        if found.lastgroup is None or start < end:  # a comment or a string, or inside the last window
            continue
        plain = _PLAIN_URL.match(text, start) if found.lastgroup == "url" else None
        if plain is not None:  # no escape, quote or space inside: the token's value is the text itself
            end = plain.end()
            urls.append(plain[1] if plain[1] is not None else plain[2] if plain[2] is not None else plain[3])
            continue
        end = _window_end(text, start, found.lastgroup == "imp")
        urls.extend(_tokens_urls(text[start:end]))
        if len(urls) >= MAX_REQUISITES:
            break
    return [url for url in urls if url.strip()]


def css_urls_whole(text: str) -> list[str]:
    """:func:`css_urls` by tinycss2 reading all of ``text`` (the reference; slow on a large stylesheet)."""
    return _tokens_urls(text)


def _tokens_urls(text: str) -> list[str]:
    try:
        return [url for url in _walk(tinycss2.parse_component_value_list(text, skip_comments=True)) if url.strip()]
    except (ValueError, TypeError, RecursionError):  # tinycss2 reads any text; a pathologically deep nest aside
        return []


def _window_end(text: str, start: int, import_rule: bool) -> int:
    """Where the ``url(...)`` or ``@import ...;`` at ``start`` ends (strings and escapes stepped over)."""
    stop = ";" if import_rule else ")"
    i, n = start, min(len(text), start + _MAX_WINDOW)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char in "\"'":
            close = _STRING_END[char].search(text, i + 1, n)
            i = n if close is None else close.end()
            continue
        if char == stop or (import_rule and char in "{}"):
            return i + 1
        i += 1
    return n


def _walk(tokens: Iterable[ast.Node]) -> Iterator[str]:
    after_import = False
    for token in tokens:
        if isinstance(token, ast.URLToken):
            yield token.value
        elif isinstance(token, ast.FunctionBlock):
            if token.lower_name == "url":
                yield from _first_string(token.arguments)
            else:
                yield from _walk(token.arguments)
        elif isinstance(token, ast.StringToken) and after_import:
            yield token.value
        elif isinstance(token, (ast.CurlyBracketsBlock, ast.SquareBracketsBlock, ast.ParenthesesBlock)):
            yield from _walk(token.content)
        if isinstance(token, ast.AtKeywordToken):
            after_import = token.lower_value == "import"
        elif not isinstance(token, (ast.WhitespaceToken, ast.Comment)):
            after_import = False


def _first_string(arguments: list[ast.Node]) -> Iterator[str]:
    for token in arguments:
        if isinstance(token, ast.StringToken):
            yield token.value
            return
        if not isinstance(token, (ast.WhitespaceToken, ast.Comment)):
            return
