"""SURT keys of URLs, as pywb and the Internet Archive write them. Pure.

A leaf module (below ``store`` and ``scope``): the CDXJ index keys its lines by
:func:`surt` (:mod:`webgather.store.cdxj`) and ``[scope] include_surt`` /
``exclude_surt`` compare prefixes with it (:mod:`webgather.scope_rules`).
"""

from __future__ import annotations

import contextlib
import re
import socket
from functools import lru_cache
from urllib.parse import quote_from_bytes, unquote_to_bytes

__all__ = ["surt", "surt_prefix"]

_WWW = re.compile(r"^www\d*\.")
_SPLIT = re.compile(r"^(([a-zA-Z][a-zA-Z0-9+.-]*):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#.*)?$", re.S)
"""RFC 3986 appendix B, as the surt package splits a URL."""
_CONTROL = re.compile(r"[\n\r\t]")
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_DECIMAL_IP = re.compile(rb"^[1-9][0-9]*(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$")
_OCTAL_IP = re.compile(rb"^0[0-7]*(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$")
_PLAIN_PATH = re.compile(r"(/(?!\.\.?(/|$))[A-Za-z0-9_.~!\"$&'()*+,:;<=>?@\[\\\]^`{|}-]+)*/?\Z")
"""A path whose key is just its lower case: printable ASCII without ``%``, no empty, ``.`` or ``..`` segment."""
_ESCAPE_SAFE = "!\"$&'()*+,-./:;<=>?@[\\]^_`{|}~"
_PATH_SESSION = (
    re.compile(r"^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^?]+\.aspx.*)$", re.I),
    re.compile(r"^(.*/)(\([0-9a-z]{24}\)/)([^?]+\.aspx.*)$", re.I),
)
_QUERY_SESSION = tuple(re.compile(r"^(.*)(?:" + p + r")(?:&(.*))?$", re.I) for p in (
    "jsessionid=[0-9a-zA-Z]{32}", "phpsessid=[0-9a-zA-Z]{32}", "sid=[0-9a-zA-Z]{32}",
    "ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24}", "cfid=[^&]+&cftoken=[^&]+",
))

def surt(url: str) -> str:
    """The key pywb looks a URL up by: ``http://www.Example.com:8080/A/?b=2&a=1`` -> ``com,example:8080)/a?a=1&b=2``.

    The Internet Archive's canonicalization as the ``surt`` package applies it
    for pywb (``surt.surt(url)``; archive-commons' WaybackURLKeyMaker):
    scheme, user info, fragment and a default port dropped; host labels
    reversed and joined by commas (IP addresses too, a leading ``www``/``wwwN``
    label dropped); path and query percent-decoded until stable and
    re-encoded once, dot segments and empty segments removed, lower-cased,
    a trailing slash dropped, session ids dropped; query arguments sorted.
    pywb binary-searches the index by this key, so a line under any other key
    is never found. Pure: IP forms are parsed, never resolved.
    tests/unit/store/test_surt_differential.py checks it against ``surt``.
    """
    match = _SPLIT.match(_CONTROL.sub("", url.strip()))
    assert match is not None  # every group of _SPLIT is optional
    scheme, authority, path, query = match.group(2) or "", match.group(4), match.group(5), match.group(7)
    if authority is None:
        return url.strip().lower()
    host, port = _host_and_port(authority, scheme.lower())
    key = f"{host}:{port})" if port else f"{host})"
    key += _path_key(path)
    query_key = _query_key(query) if query else ""
    return f"{key}?{query_key}" if query_key else key


@lru_cache(maxsize=4096)
def _host_and_port(authority: str, scheme: str) -> tuple[str, str]:
    """The SURT-ordered host and the port ("" for none or the scheme's default)."""
    hostport = authority.rpartition("@")[2].rstrip(":")
    port = ""
    if not hostport.endswith("]") and ":" in hostport:
        hostport, _, port = hostport.rpartition(":")
        port = port.lstrip("0") if port.isdigit() else port
    raw = hostport.encode("utf-8", "surrogatepass").lower().strip(b"[]")
    if b"%" in raw:
        raw = _unescape(raw)
    if not raw.isascii():
        with contextlib.suppress(ValueError):  # not a valid IDN: its bytes are escaped below
            raw = raw.decode("utf-8", "ignore").encode("idna")
    raw = raw.replace(b"..", b".").strip(b".")
    host = _WWW.sub("", _ip_form(raw) or _escape(raw.lower()).lower())
    if port == _DEFAULT_PORTS.get(scheme):
        port = ""
    return ",".join(reversed(host.split("."))), port


def _ip_form(host: bytes) -> str | None:
    """Dotted quad of a host written as an IPv4 address in any legacy form (``2130706433``, ``0177.1``)."""
    if host.isdigit():
        return socket.inet_ntoa((int(host) & 0xFFFFFFFF).to_bytes(4, "big"))
    if _DECIMAL_IP.match(host) or _OCTAL_IP.match(host):
        try:
            return socket.inet_ntoa(socket.inet_aton(host.decode("ascii")))
        except OSError:
            return None
    return None


def _path_key(path: str) -> str:
    if _PLAIN_PATH.match(path):  # the common case: nothing to decode, resolve or encode
        key = path.lower() or "/"
    else:
        raw = path.encode("utf-8", "surrogatepass")
        if b"%" in raw:
            raw = _unescape(raw)
        key = _escape(_normalize_path(raw)).lower()
    if ".aspx" in key:
        for pattern in _PATH_SESSION:
            key = pattern.sub(r"\1\3", key)
    return key[:-1] if len(key) > 1 and key.endswith("/") else key


def _normalize_path(raw: bytes) -> bytes:
    """Dot segments resolved and empty segments dropped (but the last), as the surt package does."""
    kept = _dot_segments(raw.split(b"/")[1:])
    if not kept:
        return b"/"
    return b"/" + b"".join(segment + b"/" for segment in kept[:-1] if segment) + kept[-1]


def _dot_segments(segments: list[bytes]) -> list[bytes]:
    kept: list[bytes] = []
    for segment in segments:
        if segment == b".":
            continue
        if segment == b".." and kept:
            kept.pop()
        else:
            kept.append(segment)
    return kept


def _query_key(query: str) -> str:
    text = _escape(_unescape(query.encode("utf-8", "surrogatepass")))
    for pattern in _QUERY_SESSION:
        found = pattern.match(text)
        if found:
            text = found.group(1) + (found.group(2) or "")
    text = text.lower()
    if len(text) <= 1:
        return text
    pairs = sorted(tuple(arg.split("=", 1)) for arg in text.split("&"))
    return "&".join("=".join(pair) for pair in pairs)


def _unescape(raw: bytes) -> bytes:
    """Percent-decoded until nothing changes (``%2541`` -> ``A``)."""
    while True:
        decoded = unquote_to_bytes(raw)
        if decoded == raw:
            return raw
        raw = decoded


def _escape(raw: bytes) -> str:
    """Percent-encode what is not printable ASCII, and ``%`` and ``#``."""
    return quote_from_bytes(raw, safe=_ESCAPE_SAFE)



_HERITRIX = re.compile(r"^(https?)://\(([^)]*)(\)?)(.*)$", re.I | re.S)
_PLAIN_URL = re.compile(r"^https?://[^(]", re.I)
_WWW_LABEL = re.compile(r",www\d*,?$")


def surt_prefix(text: str) -> str:
    """A regular expression (for ``match``) of the :func:`surt` keys a configured SURT prefix covers.

    Three spellings (ValueError for an empty one or one with white space):

    * Heritrix's, ``http://(com,example,)/shop/``: the scheme is dropped (http and
      https alike), ``,)`` becomes ``)``, a port ``,:8080)`` becomes ``:8080)`` and a
      trailing ``www``/``wwwN`` label is dropped (pywb's keys drop it too). Left open
      after a comma, ``http://(com,example,`` covers example.com and its subdomains.
    * A key as :func:`surt` writes it (``com,example)/shop``): a plain string prefix.
    * A plain URL (``http://example.com/shop/``): its own key, as a prefix.

    Keys are lower case, so prefixes are matched case-insensitively. A prefix ending
    in ``/`` also covers the directory itself, whose key has no trailing slash
    (``/shop/`` is key ``/shop``) but not ``/shopping``.
    """
    raw = text.strip()
    if not raw or any(ch.isspace() for ch in raw):
        raise ValueError(f"{text!r} is not a SURT prefix (empty or with white space)")
    heritrix = _HERITRIX.match(raw)
    if heritrix is not None:
        return _heritrix_pattern(heritrix.group(2), heritrix.group(3), heritrix.group(4))
    if _PLAIN_URL.match(raw):
        key = surt(raw)
        raw = key + "/" if raw.partition("?")[0].endswith("/") and not key.endswith("/") else key
    return _tail_pattern(raw.lower())


def _heritrix_pattern(host: str, closed: str, path: str) -> str:
    host = host.lower()
    if any(ch in host for ch in "/?#"):
        raise ValueError(f"SURT prefix host part not closed with ')' before its path: http://({host}")
    port = ""
    if ",:" in host or host.startswith(":"):
        host, _, port = host.rpartition(":")
        port = ":" + port
    if not closed:
        if port or path:
            raise ValueError(f"SURT prefix host part not closed with ')': {host}{port}{path}")
        # open after a comma: the next character of a key ends that label
        return re.escape(_WWW_LABEL.sub("", host).rstrip(",")) + r"[,:)]" if host.endswith(",") else re.escape(host)
    host = _WWW_LABEL.sub("", host).rstrip(",")
    return _tail_pattern(f"{host}{port}){path.lower()}")


def _tail_pattern(prefix: str) -> str:
    if prefix.endswith("/") and not prefix.endswith(")/"):
        return re.escape(prefix[:-1]) + r"(?:/|\?|\Z)"
    return re.escape(prefix)
