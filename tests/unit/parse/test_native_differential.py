"""The C link core (webgather._urlcore) against the Python reference: identical results.

URLs and hrefs from hypothesis (escapes, stray "%", fragments, schemes, non-ASCII, lone
surrogates), HTML from hypothesis and the synthetic web's pages: each parsed on both paths.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather import urls
from webgather.parse import native
from webgather.parse.links import Link, ParsedPage, parse_page
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams

if not native.available() and os.environ.get("WEBGATHER_NATIVE", "1").strip() == "0":
    pytest.skip("WEBGATHER_NATIVE=0: the C link core was not loaded", allow_module_level=True)

BASES = ["https://ex.com/dir/page.html", "http://Ex.COM:80/a/%7e/b?x#y", "https://ex.com",
         "http://[::1]:8080/p/", "mailto:a@b.c", "not a url", "https://bücher.de/ä/"]
PIECES = ["%", "%4", "%41", "%7e", "%7E", "%2f", "%zz", "%e2%82%ac", "#", "?", "/", "../", "./",
          "//", "http://", "https:", "HTTPS://X.org", "javascript:", "a", "Z", "~", " ", "\t",
          "\n", "ü", "€", "\ud800", "\x00", "[::1]", ":8080", "@", "\\", "bücher.de"]
hrefs = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=8).map("".join)


def both(call: object, *args: object) -> tuple[object, object]:
    """(Python result, C result) of ``parse_page(*args)``-like ``call``."""
    assert callable(call)
    native.use_native(False)
    try:
        pure = call(*args)
    finally:
        assert native.use_native(True)
    return pure, call(*args)


def test_the_c_core_is_built_loaded_and_in_use() -> None:
    assert native.available(), native.status()
    assert native.core() is not None and native.status().startswith("native")


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(BASES) | hrefs, hrefs)
def test_resolve_link_and_canonicalize_agree(base: str, href: str) -> None:
    core = native.core()
    assert core is not None
    assert core.resolve_link(base, href) == urls.resolve_link(base, href)
    assert core.canonicalize(href) == urls.canonicalize(href)


WORDS = ["x", " y\u00a0z ", "\u2003", "&amp;", "\xe9", "nofollow", "NoFollow none", "robots",
         "index,NOFOLLOW", "noindex", "canonical", "next", "alternate stylesheet", "icon", ""]
words = st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join)


def _tag(href: str, kind: int, word: str) -> str:
    quoted = href.replace("&", "&amp;").replace("'", "&#39;")
    return [f"<a href='{quoted}'>t{word}</a>", f"<link rel='{word}' href='{quoted}'>",
            f"<area href='{quoted}' alt='{word}' rel='{word}'>", f"<iframe src='{quoted}'></iframe>",
            f"<base href='{quoted}'>", f"<link rel=canonical href='{quoted}'>",
            f"<a href='{quoted}' rel='{word}'><img alt='{word}'><b>{word}</b></a>",
            f"<a href='{quoted}'><img src=x><img alt='{word}'></a>", f"<meta name='{word}' content='{word}'>",
            f"<title>{word}<b>{word}</b></title>", f"<svg><a href='{quoted}'>{word}</a><title>{word}</title></svg>",
            f"<template><a href='{quoted}'>{word}</a></template>", f"<frame src='{quoted}'>",
            f"<a>{word}</a><a href>{word}</a><link href><meta name>", f"<p>{word}<!-- {word} -->"][kind]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(BASES[:4]), st.lists(st.tuples(hrefs, st.integers(0, 14), words), max_size=12),
       st.integers(0, 6))
def test_generated_html_parses_identically(url: str, elements: list[tuple[str, int, str]], max_links: int) -> None:
    html = "<html><body>" + "".join(_tag(h, k, w) for h, k, w in elements) + "</body></html>"
    body = html.encode("utf-8", "surrogatepass")
    pure, fast = both(parse_page, url, body, "text/html")
    assert pure == fast
    names = ("robots", "nofollow")
    pure, fast = both(lambda: parse_page(url, body, None, max_links=max_links, robots_meta_names=names))
    assert pure == fast


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([None, "text/html; charset=latin-1", "text/html"]))
def test_random_bytes_parse_identically(junk: bytes, content_type: str | None) -> None:
    body = b"<a href='/x'>\xe2\x82<b>\xac</b></a>" + junk
    pure, fast = both(parse_page, "https://ex.com/", body, content_type)
    assert pure == fast


def test_synthetic_web_pages_parse_identically() -> None:
    model = WebModel(WebParams.for_tests(seed=5))
    checked = 0
    for url in model.content_urls()[:300]:
        response = model.page(url)
        if response.status != 200 or response.content_encoding is not None:
            continue
        content_type = dict(response.headers).get("Content-Type")
        pure, fast = both(parse_page, url, response.body, content_type)
        assert isinstance(fast, ParsedPage) and pure == fast
        checked += 1 if fast.links else 0
    assert checked > 50


def test_resolve_all_keeps_order_duplicates_and_drops_invalid() -> None:
    core = native.core()
    assert core is not None
    raws = [("b", "B", False, "a"), ("javascript:x", "", False, "a"), ("b", "again", True, "area"),
            ("https://abs.org/%7e", "", False, "iframe")]
    links = core.resolve_all("https://ex.com/d/", raws, Link)
    assert links == (Link("https://ex.com/d/b", "B", False, "a"),
                     Link("https://ex.com/d/b", "again", True, "area"),
                     Link("https://abs.org/~", "", False, "iframe"))
    assert all(type(link) is Link for link in links)


def test_resolve_all_rejects_bad_input_with_a_clear_error() -> None:
    core = native.core()
    assert core is not None
    with pytest.raises(TypeError, match="raws must hold"):
        core.resolve_all("https://ex.com/", [("only", "three", False)], Link)
    with pytest.raises(TypeError, match="plain tuple subclass"):
        core.resolve_all("https://ex.com/", [], ParsedPage)


def test_webgather_native_0_selects_the_python_path() -> None:
    code = "from webgather.parse import native; print(native.core() is None, native.status())"
    env = dict(os.environ, WEBGATHER_NATIVE="0")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "True python (WEBGATHER_NATIVE=0)"


def test_webgather_native_is_not_taken_for_a_crawl_setting() -> None:
    from webgather.config import load

    config = load(env={"WEBGATHER_NATIVE": "0", "WEBGATHER_FETCH__CONCURRENCY": "7"})
    assert config.fetch.concurrency == 7


def test_without_the_extensions_parsing_falls_back_to_python() -> None:
    # what an install without a C compiler has: setup.py's optional extensions are absent
    code = ("import sys; sys.modules['webgather._urlcore'] = None; sys.modules['webgather._pagescan'] = None\n"
            "from webgather.parse import native; from webgather.parse.links import parse_page\n"
            "page = parse_page('https://ex.com/', b'<a href=/x>x</a>', 'text/html')\n"
            "print(native.core() is None, native.scanner() is None, [l.url for l in page.links], native.status())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.startswith("True True ['https://ex.com/x'] python (the C link core is unusable")


def test_the_element_scan_checks_the_parser_layout_and_its_argument() -> None:
    from selectolax import lexbor

    from webgather import _pagescan

    tree = lexbor.LexborHTMLParser(b"<a href=x>y</a>")
    try:
        with pytest.raises(ImportError, match="not laid out as expected"):
            _pagescan.bind(lexbor.__file__, tree, b"not its raw_html")  # what another layout looks like
        with pytest.raises(ImportError, match="is not loaded"):
            _pagescan.bind("/nonexistent/lexbor.so", tree, tree.raw_html)
    finally:
        _pagescan.bind(lexbor.__file__, tree, tree.raw_html)  # bound again, as at import
    with pytest.raises(TypeError, match="LexborHTMLParser"):
        _pagescan.scan(object(), ("robots",), 10, 200, 1000)
    assert _pagescan.scan(tree, ("robots",), 10, 200, 1000)[0] == [("x", "y", False, "a")]
