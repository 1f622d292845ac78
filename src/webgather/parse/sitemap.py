"""URLs out of a sitemap (sitemaps.org protocol 0.9). Pure; never raises.

Three shapes are read:

* ``<urlset>``: its ``<loc>`` values are page URLs (:attr:`SitemapDoc.urls`);
* ``<sitemapindex>``: its ``<loc>`` values are child sitemaps (:attr:`SitemapDoc.sitemaps`);
* plain text: one URL per line (lines that are not absolute http(s) URLs are skipped).

Every URL is canonicalized (:func:`webgather.urls.canonicalize`); relative or
non-http(s) ones are dropped and counted in ``invalid``. A body starting with
the gzip magic bytes (a ``.xml.gz`` served without ``Content-Encoding``, which
the fetcher then leaves alone) is gunzipped first, bounded like the rest.

Why a scanner and not an XML parser: sitemaps in the wild are often broken
(truncated downloads, stray ``&``, HTML error pages), and a lenient scan still
gets every intact ``<loc>``; and no entity or DTD is ever expanded, so a
"billion laughs" body costs nothing (the stdlib parser would have to be
hardened to reject DOCTYPE/ENTITY for that). The scan is linear: no pattern
can backtrack past the next ``<``. Only ``<loc>`` elements with no prefix or a
prefix bound to the sitemap namespace count, so the ``<image:loc>`` and
``<video:...>`` extensions are not mistaken for pages; XML comments are
skipped; CDATA and the XML character references in a ``<loc>`` are decoded.

Bounds (the protocol's): at most ``max_urls`` (50,000) locations and
``max_bytes`` (50 MB, after gunzip) are read; past either ``truncated`` is set.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

from webgather.urls import canonicalize

__all__ = ["MAX_SITEMAP_BYTES", "MAX_SITEMAP_URLS", "SitemapDoc", "parse_sitemap"]

MAX_SITEMAP_URLS = 50_000
MAX_SITEMAP_BYTES = 50 * 1024 * 1024

_SITEMAP_NAMESPACES = (
    b"http://www.sitemaps.org/schemas/sitemap/0.9",
    b"http://www.google.com/schemas/sitemap/0.84",
    b"http://www.google.com/schemas/sitemap/0.9",
)
_PREFIX_DECL = re.compile(rb"""xmlns:([A-Za-z_][\w.-]*)\s*=\s*["']\s*([^"'\s]*)""")
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(urlset|sitemapindex)[\s>/]", re.IGNORECASE)
_LOC = re.compile(
    # No part may run past the next "<": the scan stays linear on unclosed garbage.
    rb"<(?:([A-Za-z_][\w.-]*):)?loc\s*>\s*(?:<!\[CDATA\[([^\]<]*)\]\]>|([^<]*))",
    re.IGNORECASE,
)
_CHAR_REF = re.compile(r"&(?:#(\d{1,7})|#[xX]([0-9A-Fa-f]{1,6})|(amp|lt|gt|quot|apos));")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


@dataclass(frozen=True, slots=True)
class SitemapDoc:
    """What a sitemap lists, canonical URLs in document order."""

    urls: list[str] = field(default_factory=list)
    """Page URLs (``<urlset>`` or a text sitemap)."""
    sitemaps: list[str] = field(default_factory=list)
    """Child sitemaps (``<sitemapindex>``)."""
    truncated: bool = False
    """More than ``max_urls`` locations or ``max_bytes`` bytes: the rest were not read."""
    invalid: int = 0
    """Locations dropped because they are not absolute http(s) URLs."""


def parse_sitemap(
    body: bytes, *, max_urls: int = MAX_SITEMAP_URLS, max_bytes: int = MAX_SITEMAP_BYTES
) -> SitemapDoc:
    """Read a sitemap body (see the module docstring). Garbage gives an empty doc."""
    data, truncated = _bounded(body, max_bytes)
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head.startswith(b"<"):
        urls, invalid, more = _canonical_all(_text_lines(data), max_urls)
        return SitemapDoc(urls, [], truncated or more, invalid)
    data = _strip_comments(data)
    root = _ROOT.search(data)
    locs = _xml_locs(data)
    found, invalid, more = _canonical_all(locs, max_urls)
    if root is not None and root.group(1).lower() == b"sitemapindex":
        return SitemapDoc([], found, truncated or more, invalid)
    return SitemapDoc(found, [], truncated or more, invalid)


def _bounded(body: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """The body, gunzipped if it is gzip, cut to ``max_bytes``; and whether it was cut."""
    if not body.startswith(b"\x1f\x8b"):
        return body[:max_bytes], len(body) > max_bytes
    out: list[bytes] = []
    size = 0
    rest = body
    while rest.startswith(b"\x1f\x8b") and size <= max_bytes:  # one pass per gzip member
        inflater = zlib.decompressobj(wbits=31)
        try:
            out.append(inflater.decompress(rest, max_bytes + 1 - size))
        except zlib.error:
            break
        size += len(out[-1])
        if inflater.unconsumed_tail:  # stopped by the size bound
            break
        rest = inflater.unused_data
    data = b"".join(out)
    return data[:max_bytes], size > max_bytes


def _strip_comments(data: bytes) -> bytes:
    if b"<!--" not in data:
        return data
    parts = []
    at = 0
    while (start := data.find(b"<!--", at)) >= 0:
        parts.append(data[at:start])
        end = data.find(b"-->", start + 4)
        if end < 0:
            return b"".join(parts)
        at = end + 3
    parts.append(data[at:])
    return b"".join(parts)


def _sitemap_prefixes(data: bytes) -> set[bytes]:
    if b"xmlns:" not in data:
        return set()
    return {
        match.group(1).lower()
        for match in _PREFIX_DECL.finditer(data)
        if match.group(2).rstrip(b"/") in _SITEMAP_NAMESPACES
    }


def _xml_locs(data: bytes) -> Iterator[str]:
    prefixes = _sitemap_prefixes(data)
    for match in _LOC.finditer(data):
        prefix = match.group(1)
        if prefix is not None and prefix.lower() not in prefixes:
            continue
        raw = match.group(2) if match.group(2) is not None else match.group(3)
        text = raw.decode("utf-8", "replace").strip()
        yield _CHAR_REF.sub(_char_ref, text) if "&" in text else text


def _char_ref(match: re.Match[str]) -> str:
    decimal, hexadecimal, name = match.groups()
    if name is not None:
        return _NAMED[name]
    code = int(decimal) if decimal is not None else int(hexadecimal, 16)
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"


def _text_lines(data: bytes) -> Iterator[str]:
    text = data.decode("utf-8", "replace").lstrip("\ufeff")
    for line in text.splitlines():
        if stripped := line.strip():
            yield stripped


def _canonical_all(candidates: Iterator[str], max_urls: int) -> tuple[list[str], int, bool]:
    """Canonical forms of the first ``max_urls`` candidates, the count dropped, and "more"."""
    found = []
    invalid = 0
    for candidate in islice(candidates, max_urls):
        url = canonicalize(candidate) if candidate[:4].lower() == "http" else None
        if url is None:
            invalid += 1
        else:
            found.append(url)
    more = next(candidates, None) is not None
    return found, invalid, more
