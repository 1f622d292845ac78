"""URL paths of the synthetic web and their inverse. Pure.

Content page ``i`` of a host (``0 <= i < pages``) lives at::

    i == 0        /
    i % 8 == 3    /list?page=i&sort=new     (query pages: the "?query" link syntax)
    i % 8 == 5    /a/b/p<i>.html            (nested: "../" and <base href> syntax)
    i % 8 == 6    /a/c/p<i>.html
    otherwise     /p/<i>

Fixture pages (faults, redirects, traps, ...) have readable paths, listed in
:data:`FIXTURE_ENTRY`; ``/w/<kind>/<k>`` is the witness page of fixture ``k``
of ``kind``: linked only from that fixture's body, so it is fetched exactly
when a crawler parses that body. ``/nf/<i>`` is reachable only through the
``rel=nofollow`` link of content page ``i``. :func:`parse_path` maps a
canonical path (with query) back to a :class:`Target`; anything else is
``Target("unknown")`` (a 404).
"""

from __future__ import annotations

from typing import NamedTuple

from webgather.testweb.params import FIXTURE_KINDS
from webgather.testweb.rand import derive, key64

__all__ = [
    "FIXTURE_ENTRY",
    "Target",
    "content_index",
    "content_path",
    "deep_segment",
    "entry_paths",
    "fixture_path",
    "parse_path",
]

END = -1


class Target(NamedTuple):
    kind: str
    """"content", a fixture kind, "witness", "nofollow", "robots", "robots_alt", "sitemap", "unknown"."""
    number: int = 0
    """Content page index, or the fixture's number on its host."""
    step: int = 0
    """Chain step (END for the landing page), loop side (0 a, 1 b), trap level."""
    sub: str = ""
    """For witnesses: the fixture kind they belong to."""


FIXTURE_ENTRY: dict[str, str] = {
    "not_found": "/f/404/{k}", "gone": "/f/410/{k}", "server_error": "/f/500/{k}",
    "unavailable": "/f/503/{k}", "throttled": "/f/429/{k}", "flaky": "/flaky/{k}",
    "moved": "/r/301/{k}", "found": "/r/302/{k}", "chain": "/r/chain/{k}/0",
    "loop": "/r/loop/{k}/a", "self_redirect": "/r/self/{k}", "long_chain": "/r/long/{k}/0",
    "slow": "/slow/{k}", "very_slow": "/slow/very/{k}", "reset": "/f/reset/{k}",
    "reset_headers": "/f/reset-mid/{k}", "truncated": "/f/truncated/{k}", "oversized": "/big/{k}",
    "bomb": "/bomb/{k}", "non_html": "", "calendar": "/cal/{k}", "deep_path": "/deep/{k}",
    "meta_nofollow": "/mnf/{k}", "private": "/private/{k}", "orphan": "/orphan/{k}",
}
"""Path of the first URL of each fixture kind (``{k}``: the fixture's number on its host)."""

_SIMPLE = {
    ("f", "404"): "not_found", ("f", "410"): "gone", ("f", "500"): "server_error",
    ("f", "503"): "unavailable", ("f", "429"): "throttled", ("f", "reset"): "reset",
    ("f", "reset-mid"): "reset_headers", ("f", "truncated"): "truncated",
    ("r", "301"): "moved", ("r", "302"): "found", ("r", "self"): "self_redirect",
    ("slow", "very"): "very_slow",
}
_ONE = {"flaky": "flaky", "slow": "slow", "big": "oversized", "bomb": "bomb", "mnf": "meta_nofollow",
        "private": "private", "orphan": "orphan", "nf": "nofollow"}
_NON_HTML = {"doc": ".pdf", "img": ".png", "api": ".json"}
NON_HTML_KINDS = (("doc", ".pdf"), ("img", ".png"), ("api", ".json"))


def content_path(i: int) -> str:
    if i == 0:
        return "/"
    r = i % 8
    if r == 3:
        return f"/list?page={i}&sort=new"
    if r == 5:
        return f"/a/b/p{i}.html"
    if r == 6:
        return f"/a/c/p{i}.html"
    return f"/p/{i}"


def _number(text: str) -> int | None:
    if not text.isdigit() or (len(text) > 1 and text[0] == "0") or len(text) > 12:
        return None
    return int(text)


def content_index(path: str) -> int | None:
    """The content page index at ``path``, or None."""
    if path == "/":
        return 0
    if path.startswith("/p/"):
        i = _number(path[3:])
        return i if i is not None and i > 0 and i % 8 not in (3, 5, 6) else None
    if path.startswith("/list?page=") and path.endswith("&sort=new"):
        i = _number(path[11:-9])
        return i if i is not None and i % 8 == 3 else None
    for prefix, rest in (("/a/b/p", 5), ("/a/c/p", 6)):
        if path.startswith(prefix) and path.endswith(".html"):
            i = _number(path[6:-5])
            return i if i is not None and i % 8 == rest else None
    return None


def fixture_path(kind: str, k: int) -> str:
    """Entry path of fixture ``k`` of ``kind``."""
    if kind == "non_html":
        head, ext = NON_HTML_KINDS[k % 3]
        return f"/{head}/{k}{ext}"
    return FIXTURE_ENTRY[kind].format(k=k)


def entry_paths(kind: str, k: int) -> tuple[str, ...]:
    """Paths the home page links for fixture ``k`` of ``kind``."""
    if kind == "private":
        return (f"/private/{k}", f"/private/open/{k}")
    if kind == "orphan":
        return ()
    return (fixture_path(kind, k),)


def deep_segment(seed: int, level: int, chars: int) -> str:
    """Segment number ``level`` (1-based) of the deep-path trap: distinct per level."""
    filler = f"{derive(key64('deep', seed), level):016x}" * (chars // 16 + 1)
    head = f"l{level}-"
    return head + filler[: max(1, chars - len(head))]


def parse_path(path: str, seed: int, trap_segment_chars: int) -> Target:
    """What lives at ``path`` (canonical path plus query) on any host of the web."""
    index = content_index(path)
    if index is not None:
        return Target("content", index)
    if path in ("/robots.txt", "/robots-alt.txt", "/sitemap.xml"):
        return Target({"/robots.txt": "robots", "/robots-alt.txt": "robots_alt"}.get(path, "sitemap"))
    if "?" in path or "#" in path:
        return Target("unknown")
    parts = path[1:].split("/")
    try:
        return _parse_parts(parts, seed, trap_segment_chars)
    except (IndexError, ValueError):
        return Target("unknown")


def _num(text: str) -> int:
    value = _number(text)
    if value is None:
        raise ValueError(text)
    return value


def _parse_parts(parts: list[str], seed: int, chars: int) -> Target:
    head = parts[0]
    if len(parts) == 3 and (head, parts[1]) in _SIMPLE:
        return Target(_SIMPLE[(head, parts[1])], _num(parts[2]))
    if len(parts) == 2 and head in _ONE:
        return Target(_ONE[head], _num(parts[1]))
    if head == "private" and len(parts) == 3 and parts[1] == "open":
        return Target("private", _num(parts[2]), step=1)
    if head in _NON_HTML and len(parts) == 2 and parts[1].endswith(_NON_HTML[head]):
        k = _num(parts[1][: -len(_NON_HTML[head])])
        if NON_HTML_KINDS[k % 3][0] == head:
            return Target("non_html", k)
    if head == "w" and len(parts) == 3 and parts[1] in FIXTURE_KINDS:
        return Target("witness", _num(parts[2]), sub=parts[1])
    if head == "r" and len(parts) == 4 and parts[1] in ("chain", "long", "loop"):
        return _parse_redirect(parts)
    if head == "cal" and len(parts) >= 2 and all(p == "next" for p in parts[2:]):
        return Target("calendar", _num(parts[1]), step=len(parts) - 2)
    if head == "deep" and len(parts) >= 2:
        levels = parts[2:]
        if all(seg == deep_segment(seed, lv + 1, chars) for lv, seg in enumerate(levels)):
            return Target("deep_path", _num(parts[1]), step=len(levels))
    return Target("unknown")


def _parse_redirect(parts: list[str]) -> Target:
    k = _num(parts[2])
    kind = {"chain": "chain", "long": "long_chain", "loop": "loop"}[parts[1]]
    last = parts[3]
    if kind == "loop":
        if last not in ("a", "b"):
            raise ValueError(last)
        return Target(kind, k, step=0 if last == "a" else 1)
    return Target(kind, k, step=END if last == "end" else _num(last))
