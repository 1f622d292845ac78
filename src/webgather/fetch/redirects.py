"""Where a 3xx points. Pure.

Only 301, 302, 303, 307 and 308 redirect (300 and 304 do not); the Location is
resolved against the requested URL and canonicalized with
:func:`webgather.urls.resolve_link`, like any link. Bytes in a Location that
are not UTF-8 (kept as surrogate escapes by the fetcher) are percent-encoded,
which is what browsers request. Loop and hop-count checks are the caller's
(contract step 5): this only names the target.
"""

from __future__ import annotations

from webgather.fetch.model import FetchResult
from webgather.urls import resolve_link

__all__ = ["REDIRECT_STATUSES", "redirect_target"]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def redirect_target(result: FetchResult) -> str | None:
    """The canonical URL a redirect result points to, or None."""
    if result.status not in REDIRECT_STATUSES:
        return None
    location = result.header("Location")
    if location is None or not location.strip():
        return None
    return resolve_link(result.url, _wire_safe(location.strip()))


def _wire_safe(value: str) -> str:
    """Percent-encode the raw bytes that arrived as surrogate escapes."""
    if value.isascii() or not any("\udc80" <= c <= "\udcff" for c in value):
        return value
    raw = value.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b < 0x80 else f"%{b:02X}" for b in raw)
