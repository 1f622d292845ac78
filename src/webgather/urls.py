"""URL parsing, joining, canonical form, host keys and 64-bit fingerprints. Pure.

Parsing and joining follow the WHATWG URL Standard through ``ada-url`` (a C++
parser: about 2 microseconds a join, which matters at ~25 links per page).
On top of the standard's serialization the canonical form

* drops the fragment (it never reaches the server),
* normalizes percent-encoding: hex digits upper-cased, escaped unreserved
  characters (``A-Z a-z 0-9 - . _ ~``) decoded, as RFC 3986 section 6.2.2.2 allows,
* keeps the query exactly, in its order (reordering would merge URLs a server
  may treat as distinct),
* drops credentials (``user:pass@``: one URL for one resource, and no password in
  the crawl log or the archive), and refuses port 0 (``None``).

Lower-case scheme and host, IDNA (punycode) hosts, dot-segment removal and
dropping the default port come from the standard itself. webgather crawls only
``http`` and ``https``; anything else canonicalizes to ``None``.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ada_url.ada_adapter import ffi as _ffi  # type: ignore[attr-defined]
from ada_url.ada_adapter import lib as _ada  # type: ignore[attr-defined]

from webgather._types import HostKey

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "canonicalize",
    "fingerprint",
    "fingerprints",
    "host_key",
    "hostname",
    "join",
    "path_of",
    "resolve_link",
]

_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)


_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_AUTHORITY = re.compile(r"//([^/?]*)")
_HEX_DIGITS = frozenset("0123456789ABCDEFabcdef")
HOST_KEY_CACHE_ENTRIES = 4096
"""URLs whose host keys :func:`host_key` remembers (the pages in flight and their new links)."""


def _normalize_escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _normalize_escape_keep_hex(match: re.Match[str]) -> str:
    # Beside a stray "%", a decoded hex digit could form a new escape ("%a%41" ->
    # "%aA" -> "%AA"): keep hex-digit escapes encoded so canonicalize stays idempotent.
    char = chr(int(match.group(1), 16))
    if char in _UNRESERVED and char not in _HEX_DIGITS:
        return char
    return "%" + match.group(1).upper()


def _finish(href: str) -> str | None:
    """Canonical tail work on a WHATWG-serialized absolute URL."""
    if href.startswith("http://"):
        start = 7
    elif href.startswith("https://"):
        start = 8
    else:
        return None
    hash_at = href.find("#")
    if hash_at >= 0:
        href = href[:hash_at]
    auth_end = href.find("/", start)
    auth_end = len(href) if auth_end < 0 else auth_end
    at = href.rfind("@", start, auth_end)
    if at >= 0:  # credentials: never sent, logged or archived; the URL is the same resource without them
        href = href[:start] + href[at + 1 :]
        auth_end -= at + 1 - start
    if href.endswith(":0", start, auth_end):  # port 0: no server listens there (and it is not port 80)
        return None
    if "%" in href:
        head, sep, rest = href.partition("//")
        slash = rest.find("/")
        if slash >= 0:  # leave the authority alone: escapes there are not ours to decode
            tail = rest[slash:]
            fix = _normalize_escape_keep_hex if _STRAY_PERCENT.search(tail) else _normalize_escape
            rest = rest[:slash] + _PERCENT.sub(fix, tail)
        href = head + sep + rest
    return href


def _ada_href(url: str, base: str | None = None) -> str | None:
    """ada's parse (with ``base``) and serialization, or ``None`` where it fails.

    The same C calls as ``ada_url.join_url``/``normalize_url`` without their
    per-call ``ffi.gc`` object and exception: ~0.6 us of the ~2.8 us a link costs.
    """
    try:
        raw = url.encode()
        raw_base = base.encode() if base is not None else None
    except UnicodeEncodeError:  # lone surrogates: ada_url's wrapper says "Invalid URL" too
        return None
    if raw_base is None:
        parsed = _ada.ada_parse(raw, len(raw))
    else:
        parsed = _ada.ada_parse_with_base(raw, len(raw), raw_base, len(raw_base))
    try:
        if not _ada.ada_is_valid(parsed):
            return None
        href = _ada.ada_get_href(parsed)
        return str(_ffi.unpack(href.data, href.length).decode())
    finally:
        _ada.ada_free(parsed)


def join(base: str, href: str) -> str | None:
    """Resolve ``href`` against ``base`` by the WHATWG URL Standard.

    Returns the serialized absolute URL (fragment kept), or ``None`` where the
    standard says failure.
    """
    return _ada_href(href, base)


def canonicalize(url: str) -> str | None:
    """Canonical form of an absolute ``http``/``https`` URL, or ``None``.

    ``None`` for strings that are not valid absolute URLs and for other schemes.
    """
    href = _ada_href(url)
    return None if href is None else _finish(href)


def resolve_link(base: str, href: str) -> str | None:
    """``canonicalize(join(base, href))`` in one step: the per-link hot path."""
    joined = _ada_href(href, base)
    return None if joined is None else _finish(joined)


@functools.lru_cache(maxsize=HOST_KEY_CACHE_ENTRIES)
def host_key(url: str) -> HostKey:
    """``host[:port]`` of a canonical URL: the unit of politeness and partitioning.

    ValueError if ``url`` has no ``//`` (TypeError if it is not a string).
    Memoized: a page's URL has its host key taken about five times on the event loop
    (robots gate, fetch, crawl log, stats, link log), 0.65 us each by the regex, 0.1 us a hit.
    """
    authority = _AUTHORITY.search(url)  # after the first "//", up to "/" or "?"
    if authority is None:
        raise ValueError(f"no authority in {url!r}")
    return HostKey(authority[1].rpartition("@")[2])


def hostname(url: str) -> str:
    """The host of a canonical URL without its port (IPv6 keeps its brackets)."""
    key = host_key(url)
    if key.startswith("["):
        return key[: key.index("]") + 1]
    return key.partition(":")[0]


def path_of(url: str) -> str:
    """Path plus query of a canonical URL (what goes on the request line)."""
    rest = url[url.index("//") + 2 :]
    slash = rest.find("/")
    return rest[slash:] if slash >= 0 else "/"


def fingerprint(url: str) -> int:
    """64-bit fingerprint of a canonical URL (BLAKE2b, little-endian unsigned)."""
    digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def fingerprints(urls: Iterable[str]) -> np.ndarray:
    """Fingerprints of many canonical URLs as a ``uint64`` array, in order."""
    import numpy as np  # here: every command imports this module, only the frontier and analyses need numpy

    blake = hashlib.blake2b
    raw = b"".join(
        blake(u.encode("utf-8", "surrogatepass"), digest_size=8).digest() for u in urls
    )
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64, copy=False)
