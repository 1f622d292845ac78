"""CDXJ index lines (the pywb convention) and SURT keys. Line building is pure.

A line is ``<surt> <14-digit timestamp> <json>`` with the JSON block
``{"url", "mime", "status", "digest", "length", "offset", "filename"}``; as in
pywb, ``status``, ``length`` and ``offset`` are strings, ``digest`` is the
bare base32 SHA-1 (no ``sha1:``) and a revisit's ``mime`` is ``warc/revisit``.
Lines are appended in write order while crawling; :func:`sort_index` writes a
sorted copy (``index.sorted.cdxj``) when called (the crawl does not call it:
``webgather replay`` sorts a merge of every node's index for pywb, see
:mod:`webgather.store.pywbcoll`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from json.encoder import encode_basestring_ascii
from pathlib import Path
from urllib.parse import quote_from_bytes, unquote_to_bytes

from webgather.errors import CorruptState, StoreError

__all__ = ["CdxjEntry", "INDEX_NAME", "SORTED_NAME", "cdxj_line", "parse_line", "read_index", "sort_index", "surt", "timestamp14"]

INDEX_NAME = "index.cdxj"
SORTED_NAME = "index.sorted.cdxj"
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
_json_str = encode_basestring_ascii
"""A str as a JSON string literal, as json.dumps writes it (ensure_ascii)."""


@dataclass(frozen=True, slots=True)
class CdxjEntry:
    """One index line, typed."""

    key: str
    timestamp: str
    url: str
    mime: str
    status: int | None
    digest: str
    length: int
    offset: int
    filename: str


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
    raw = hostport.encode("utf-8").lower().strip(b"[]")
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
        raw = path.encode("utf-8")
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
    text = _escape(_unescape(query.encode("utf-8")))
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


@lru_cache(maxsize=16)
def timestamp14(warc_date: str) -> str:
    """``2024-05-01T12:00:00Z`` -> ``20240501120000`` (cached: pages of one second share a date)."""
    digits = "".join(ch for ch in warc_date if ch.isdigit())[:14]
    if len(digits) != 14:
        raise StoreError(f"not a WARC date: {warc_date!r}")
    return digits


def cdxj_line(
    url: str, warc_date: str, mime: str, status: int | None, digest: str, length: int, offset: int, filename: str
) -> str:
    """One index line (ending in a newline) for a response or revisit record.

    The JSON block is what ``json.dumps(block, separators=(",", ":"))`` writes
    for the dict of the module docstring, built by hand from the same string
    escaper (13 -> 7 us a line, bench/store_speed.py's pages).
    """
    state = "-" if status is None else str(status)
    return (
        f'{surt(url)} {timestamp14(warc_date)} {{"url":{_json_str(url)},"mime":{_json_str(mime or "unk")},'
        f'"status":{_json_str(state)},"digest":{_json_str(digest.removeprefix("sha1:"))},'
        f'"length":"{length}","offset":"{offset}","filename":{_json_str(filename)}}}\n'
    )


def parse_line(line: str) -> CdxjEntry:
    """Parse one index line; :class:`CorruptState` if it is not one."""
    try:
        key, timestamp, text = line.rstrip("\n").split(" ", 2)
        block = json.loads(text)
        status = block.get("status", "-")
        return CdxjEntry(
            key, timestamp, block["url"], block["mime"], None if status == "-" else int(status),
            block["digest"], int(block["length"]), int(block["offset"]), block["filename"],
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptState(f"not a CDXJ line: {line[:200]!r} ({exc})") from None


def read_index(path: Path) -> Iterator[CdxjEntry]:
    """Entries of an index file in file order; a partial last line (crash) is skipped."""
    try:
        with path.open("r", encoding="utf-8", newline="\n") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    return
                yield parse_line(line)
    except OSError as exc:
        raise StoreError(f"cannot read index {path}: {exc.strerror}") from exc


def sort_index(warc_dir: Path) -> Path:
    """Write ``index.sorted.cdxj`` (lines sorted by key, then timestamp) beside the index.

    Sorts in memory: about 300 bytes a record, so 10 M records need ~3 GB.
    """
    source = Path(warc_dir) / INDEX_NAME
    target = Path(warc_dir) / SORTED_NAME
    try:
        with source.open("r", encoding="utf-8", newline="\n") as handle:
            lines = [line for line in handle if line.endswith("\n")]
        lines.sort()
        temp = target.with_suffix(".tmp")
        with temp.open("w", encoding="utf-8", newline="\n") as out:
            out.writelines(lines)
        os.replace(temp, target)
    except OSError as exc:
        raise StoreError(f"cannot sort index {source}: {exc.strerror}") from exc
    return target
