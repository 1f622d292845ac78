"""Which core joins and canonicalizes a page's links: C (``webgather._urlcore``) or Python.

The C extension is optional: ``pip install -e .`` builds it where a C compiler and the
Python headers are (setup.py); elsewhere the install is pure Python. It does not link
ada: it is handed the addresses of ada's C functions that ada_url's cffi module already
exports, once their C types match the ones ``_urlcore.c`` declares, and it is used only
after a self-test agrees with the Python reference (:mod:`webgather.urls`) on URLs that
exercise every rule of the canonical form. Anything missing or different means the
pure-Python path, logged once. ``WEBGATHER_NATIVE=0`` in the environment asks for it.
Both paths give identical results (tests/unit/parse/test_native_differential.py).
"""

from __future__ import annotations

import logging
from types import ModuleType

from ada_url.ada_adapter import ffi as _ffi  # type: ignore[attr-defined]
from ada_url.ada_adapter import lib as _ada  # type: ignore[attr-defined]
from selectolax import lexbor as _lexbor

from webgather.config import native_parse_wanted
from webgather.urls import canonicalize, resolve_link

__all__ = ["available", "core", "scanner", "status", "use_native"]

log = logging.getLogger(__name__)

# The C types _urlcore.c declares for ada's functions, as cffi spells them.
_SIGNATURES = {
    "ada_parse": "void *(*)(char *, size_t)",
    "ada_parse_with_base": "void *(*)(char *, size_t, char *, size_t)",
    "ada_is_valid": "_Bool(*)(void *)",
    "ada_get_href": "ada_string(*)(void *)",
    "ada_free": "void(*)(void *)",
}
_BASE = "https://Ex.com:443/a/b/c.html?q=1#frag"
# (base, href): relative forms, escapes (decoded, upper-cased, stray "%"), fragments,
# other schemes, invalid hosts, IDNA, lone surrogates and non-ASCII.
_SELF_TEST = [
    (_BASE, href) for href in (
        "d.html", "../x/%7euser/%41%2f%2F%3a?%41#x", "/p%zz%41%4a", "//other.org", "?q=2",
        "#only", "mailto:a@b.c", "javascript:void(0)", "http://a b/", "https://bücher.de/ü",
        "http://[::1]:80/%e2%82%ac", "\ud800", " /trim ", "", "HTTP://X.ORG:8080/%7E%7e%",
        "http://u:p@a.org:0/", "https://u:p%40@x.org/%7e", "http://@x.org/",
    )
] + [("not a url", "https://ok.org/%61"), ("\udc80", "/x"), ("mailto:x@y.z", "/rel")]


def _addresses() -> list[int]:
    """Addresses of ada's functions, or ValueError when their C types are not ours."""
    for name, signature in _SIGNATURES.items():
        found = _ffi.typeof(getattr(_ada, name)).cname
        if found != signature:
            raise ValueError(f"ada_url's {name} is {found}, not {signature}")
    string = _ffi.typeof("ada_string")
    if [f for f, _ in string.fields] != ["data", "length"] or _ffi.sizeof(string) != 16:
        raise ValueError("ada_url's ada_string is not {const char *data; size_t length}")
    return [int(_ffi.cast("uintptr_t", _ffi.addressof(_ada, name))) for name in _SIGNATURES]


def _agrees(module: ModuleType) -> str | None:
    """The first URL where ``module`` and the Python reference differ, or None."""
    for base, href in _SELF_TEST:
        if module.resolve_link(base, href) != resolve_link(base, href):
            return f"resolve_link({base!r}, {href!r})"
        if module.canonicalize(href) != canonicalize(href):
            return f"canonicalize({href!r})"
    return None


def _load() -> tuple[ModuleType | None, str]:
    if not native_parse_wanted():
        return None, "python (WEBGATHER_NATIVE=0)"
    try:
        from webgather import _urlcore

        _urlcore.bind(*_addresses())
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        return None, f"python (the C link core is unusable: {exc})"
    differs = _agrees(_urlcore)
    if differs is not None:
        return None, f"python (the C link core disagrees with the reference on {differs})"
    return _urlcore, "native (C link core"


def _load_scanner() -> ModuleType | None:
    """The C element scan (webgather._pagescan), bound to selectolax's lexbor, or None."""
    sample = b"<title>t</title><a href=x>y</a>"
    try:
        from webgather import _pagescan

        tree = _lexbor.LexborHTMLParser(sample)
        _pagescan.bind(_lexbor.__file__, tree, tree.raw_html)
        found = _pagescan.scan(tree, ("robots",), 10, 200, 1000)
    except (ImportError, AttributeError, ValueError, TypeError) as exc:
        log.info("webgather: the C element scan is unusable (%s): Python reads the elements", exc)
        return None
    if found != ([("x", "y", False, "a")], None, None, "t", False, False, False):
        log.info("webgather: the C element scan disagrees on %r: Python reads the elements", sample)
        return None
    return _pagescan


_LOADED, _STATUS = _load()
if _LOADED is None and not _STATUS.startswith("python (WEBGATHER_NATIVE=0"):
    log.info("webgather: link core: %s", _STATUS)
_SCANNER = None if _LOADED is None else _load_scanner()
if _SCANNER is not None:
    _STATUS += " + C element scan"
_STATUS += ")" if _STATUS.startswith("native") else ""
_active: ModuleType | None = _LOADED
_active_scanner: ModuleType | None = _SCANNER


def core() -> ModuleType | None:
    """The C core in use, or None for the pure-Python path."""
    return _active


def scanner() -> ModuleType | None:
    """The C element scan in use, or None for the Python one."""
    return _active_scanner


def available() -> bool:
    """The C core loaded and passed its self-test (whether or not it is in use)."""
    return _LOADED is not None


def status() -> str:
    """One line for ``webgather --version``: which path is in use, and why."""
    if _active is None and _LOADED is not None:
        return "python (chosen by use_native(False))"
    return _STATUS


def use_native(enabled: bool) -> bool:
    """Switch paths (tests run both in one process); returns whether the C core is now in use."""
    global _active, _active_scanner
    _active = _LOADED if enabled else None
    _active_scanner = _SCANNER if enabled else None
    return _active is not None
