"""How much of a large HTML page is parsed: a prefix bounded in bytes and in tags. Pure.

lexbor's tree of a page costs memory by the element and the text node, not by the byte of
HTML: measured (one parse, peak RSS growth), 50 MB of rows of three tags per 90 bytes
(3.2 million ``<``) took 950 MiB, 8 MB of ``<p>x`` (4 million ``<``) 630 MiB, 8 MB of
``<td>`` 50 MiB. A parser process given the node's largest decoded page
(``fetch.max_decoded_bytes``, 50 MiB) could thus hold a GiB. A page larger than
``parse.max_bytes`` or with more ``<`` than ``parse.max_tags`` is parsed from a prefix within
both: about 300 bytes of tree per ``<`` at worst, so 500,000 tags are at most about 150 MiB.
What comes after the cut (links, text) is not read, as links past ``MAX_LINKS`` are not: the
crawl records the page as ``parse_truncated``.

The cut falls just before a ``<``, so no tag is split (a page with no ``<`` near the byte
bound is cut at the bound). Counting is C-speed (``bytes.count`` over 64 KiB windows).
"""

from __future__ import annotations

__all__ = ["WINDOW", "html_prefix_length"]

WINDOW = 64 * 1024
"""Bytes counted at a time while looking for the ``<`` past the tag bound."""


def html_prefix_length(body: bytes, max_bytes: int, max_tags: int) -> int:
    """How many leading bytes of ``body`` to parse: ``len(body)`` when it has at most ``max_bytes``
    bytes and ``max_tags`` ``<``; else the offset of the first ``<`` past ``max_tags`` of them,
    or of the last ``<`` before ``max_bytes``, whichever comes first."""
    if len(body) <= max_bytes and body.count(b"<") <= max_tags:
        return len(body)
    limit = min(len(body), max_bytes)
    past = _nth_tag(body, max_tags + 1, limit)
    if past is not None:
        return past
    if limit == len(body):
        return limit
    last = body.rfind(b"<", 0, limit)
    return last if last > 0 else limit


def _nth_tag(body: bytes, n: int, limit: int) -> int | None:
    """The offset of the ``n``-th ``<`` (1-based) in ``body[:limit]``, or None if it has fewer."""
    seen, start = 0, 0
    while start < limit:
        end = min(start + WINDOW, limit)
        here = body.count(b"<", start, end)
        if seen + here >= n:
            return _nth_in_window(body, n - seen, start, end)
        seen, start = seen + here, end
    return None


def _nth_in_window(body: bytes, n: int, start: int, end: int) -> int:
    """The offset of the ``n``-th ``<`` in ``body[start:end]``, which has at least ``n`` (binary search)."""
    low, high = start, end  # invariant: body[start:high] has >= n of them, body[start:low] fewer
    while high - low > 1:
        middle = (low + high) // 2
        if body.count(b"<", start, middle) >= n:
            high = middle
        else:
            low = middle
    return high - 1
