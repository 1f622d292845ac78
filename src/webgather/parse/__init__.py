"""Parsing fetched documents: HTML pages and sitemaps. Pure (no IO, no clock).

Input: a fetched body (bytes, Content-Encoding already removed by the fetcher),
its URL and its Content-Type header. Output: a :class:`ParsedPage` (links in
document order with anchor text and ``rel=nofollow``, ``<base href>``,
``rel=canonical``, meta robots, charset, title, visible text) or a
:class:`SitemapDoc` (page URLs and child sitemaps). Called by
``runtime.engine.pipeline`` for each 2xx HTML page or ``kind="sitemap"`` document; the
pipeline passes :func:`followable` links to the router and writes all links
to the link log. Nothing here raises on garbage input.
"""

from __future__ import annotations

from webgather.parse.charset import decode_html, label_to_codec, sniff_encoding
from webgather.parse.links import Link, ParsedPage, followable, parse_page
from webgather.parse.sitemap import SitemapDoc, parse_sitemap

__all__ = [
    "Link",
    "ParsedPage",
    "SitemapDoc",
    "decode_html",
    "followable",
    "label_to_codec",
    "parse_page",
    "parse_sitemap",
    "sniff_encoding",
]
