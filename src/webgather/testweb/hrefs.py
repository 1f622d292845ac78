"""How a page writes a link: many syntaxes, one canonical target. Pure.

Given the target (canonical path on this or another host) and the page's
effective base (its ``<base href>`` if it has one, else its own URL), an href
is chosen among: root-relative, directory-relative, ``./``, excess ``../``
(clamped at the root by the URL Standard), absolute, upper-case absolute,
scheme-relative, a percent-encoded digit, ``?query`` only, empty or
``#fragment`` for a link to the page itself; some get a ``#fragment`` or
surrounding spaces. Every form resolves, by WHATWG rules plus
:func:`webgather.urls.canonicalize`, to the same canonical URL (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

from webgather.testweb.rand import derive, pick_from_mix, unit

__all__ = ["BaseContext", "attr", "choose_href", "dir_of", "relative"]


_SAME_HOST = (
    ("root", 0.25), ("rel", 0.22), ("dot", 0.05), ("up", 0.05), ("abs", 0.15),
    ("abs_upper", 0.03), ("scheme_rel", 0.07), ("pct", 0.03), ("rel", 0.15),
)
_OTHER_HOST = (("abs", 0.6), ("scheme_rel", 0.3), ("abs_upper", 0.1))


@dataclass(frozen=True, slots=True)
class BaseContext:
    """Where relative links of a page resolve from."""

    authority: str
    """``host[:port]`` of the page."""
    page_path: str
    """The page's own canonical path (with query)."""
    base_dir: str
    """Directory of the effective base URL, ending in "/"."""
    has_base: bool
    """The page has a ``<base href>`` (then no self/query-only forms)."""


def dir_of(path: str) -> str:
    """Directory part of a path (query dropped): "/p/12" -> "/p/", "/list?x" -> "/"."""
    bare = path.partition("?")[0]
    return bare[: bare.rfind("/") + 1]


def relative(base_dir: str, target: str) -> str:
    """A relative reference from directory ``base_dir`` to root-relative ``target``."""
    bare, mark, query = target.partition("?")
    base_parts = [p for p in base_dir.split("/") if p]
    target_parts = bare.split("/")[1:]
    target_dir, target_file = target_parts[:-1], target_parts[-1]
    common = 0
    while common < min(len(base_parts), len(target_dir)) and base_parts[common] == target_dir[common]:
        common += 1
    rel = "../" * (len(base_parts) - common) + "".join(d + "/" for d in target_dir[common:]) + target_file
    if not rel:
        rel = "./"
    return rel + (mark + query if mark else "")



def _percent_digit(path: str) -> str | None:
    bare, mark, query = path.partition("?")
    for at in range(len(bare) - 1, -1, -1):
        if bare[at].isdigit():
            return f"{bare[:at]}%{ord(bare[at]):02X}{bare[at + 1:]}{mark}{query}"
    return None


def _local_form(ctx: BaseContext, target: str, key: int) -> str | None:
    if ctx.has_base:
        return None
    if target == ctx.page_path:
        return ("", "#", "#top")[key % 3]
    bare, mark, query = target.partition("?")
    if mark and ctx.page_path.partition("?")[0] == bare:
        return "?" + query
    return None


def _same_host(ctx: BaseContext, target: str, form: str, key: int) -> str:
    if form == "rel":
        return relative(ctx.base_dir, target)
    if form == "dot":
        rel = relative(ctx.base_dir, target)
        return rel if rel.startswith(".") else "./" + rel
    if form == "up":
        depth = ctx.base_dir.count("/") - 1
        return "../" * (depth + 1) + target[1:]
    if form == "pct":
        return _percent_digit(target) or target
    return _absolute(ctx.authority, target, form) if form != "root" else target


def _absolute(authority: str, target: str, form: str) -> str:
    if form == "scheme_rel":
        return f"//{authority}{target}"
    if form == "abs_upper":
        return f"HTTP://{authority.upper()}{target}"
    return f"http://{authority}{target}"


def choose_href(ctx: BaseContext, authority: str, target: str, draw: int, decor: int, link: int) -> str:
    """The href text for link number ``link``, from two 64-bit draws of the page.

    ``authority`` and ``target`` name the canonical destination (host[:port] and
    path with query). Fragments and spaces never change the canonical URL.
    """
    u = unit(draw)
    if authority == ctx.authority:
        href_local = _local_form(ctx, target, draw >> 8) if u < 0.5 else None
        href = href_local if href_local is not None else _same_host(ctx, target, pick_from_mix(_SAME_HOST, unit(derive(draw, 1))), draw)
        local = href_local is not None and (href == "" or href.startswith("#"))
    else:
        href = _absolute(authority, target, pick_from_mix(_OTHER_HOST, u))
        local = False
    if not local and decor % 10 == 0:
        href += f"#s{link}"
    if decor % 31 == 1:
        href = f" {href} "
    return href


def attr(name: str, value: str, key: int) -> str:
    """`` name="value"`` with ``&`` escaped; sometimes single-quoted or unquoted."""
    value = value.replace("&", "&amp;")
    style = key % 20
    if style == 0 and value and all(c.isalnum() or c in "/._-:%" for c in value):
        return f" {name}={value}"
    if style in (1, 2):
        return f" {name}='{value}'"
    return f' {name}="{value}"'
