"""webgather.urls: canonical form, joining, host keys and fingerprints."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather import urls
from webgather.urls import (
    canonicalize,
    fingerprint,
    fingerprints,
    host_key,
    hostname,
    join,
    path_of,
    resolve_link,
)


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        # scheme and host case
        ("HTTP://Example.COM/Path", "http://example.com/Path"),
        ("HtTpS://EX.com", "https://ex.com/"),
        # default port dropped, others kept
        ("http://ex.com:80/a", "http://ex.com/a"),
        ("https://ex.com:443/a", "https://ex.com/a"),
        ("http://ex.com:443/a", "http://ex.com:443/a"),
        ("https://ex.com:8443", "https://ex.com:8443/"),
        ("http://ex.com:/a", "http://ex.com/a"),
        # fragment dropped, empty query kept
        ("http://ex.com/a#frag", "http://ex.com/a"),
        ("http://ex.com/a?b#c?d", "http://ex.com/a?b"),
        ("http://ex.com/?", "http://ex.com/?"),
        # percent-encoding: unreserved decoded, others upper-cased, rest encoded
        ("http://ex.com/%7euser/%41%62%2D%5F%2e", "http://ex.com/~user/Ab-_."),
        ("http://ex.com/a%2fb%3f", "http://ex.com/a%2Fb%3F"),
        ("http://ex.com/?q=%7e&x=%e2%82%ac", "http://ex.com/?q=~&x=%E2%82%AC"),
        ("http://ex.com/é ü", "http://ex.com/%C3%A9%20%C3%BC"),
        ("http://ex.com/%25", "http://ex.com/%25"),
        ("http://ex.com/%2541", "http://ex.com/%2541"),
        ("http://ex.com/%zz", "http://ex.com/%zz"),
        # query order kept exactly
        ("http://ex.com/?b=2&a=1&b=1", "http://ex.com/?b=2&a=1&b=1"),
        # IDNA
        ("http://Bücher.DE/", "http://xn--bcher-kva.de/"),
        ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
        # dot segments, also percent-encoded ones
        ("http://ex.com/a/./b/../c", "http://ex.com/a/c"),
        ("http://ex.com/a/%2e%2E/b", "http://ex.com/b"),
        ("http://ex.com/../../x", "http://ex.com/x"),
        # IP hosts
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://[0:0::1]:80/x", "http://[::1]/x"),
        # credentials are dropped: one URL for the resource, no password in the log or the archive
        ("http://user:p%41ss@ex.com/", "http://ex.com/"),
        ("https://u@ex.com:8443/a@b?c@d", "https://ex.com:8443/a@b?c@d"),
        ("http://u:p%40@ex.com/%7e", "http://ex.com/~"),
    ],
)
def test_canonical_form(url: str, canonical: str) -> None:
    assert canonicalize(url) == canonical


@pytest.mark.parametrize(
    "url", ["ftp://ex.com/", "mailto:a@b.c", "javascript:alert(1)", "data:,x", "http://", "/relative", "", "http://[::1",
            "http://ex.com:0/", "http://u:p@ex.com:000/x"]
)
def test_not_crawlable_is_none(url: str) -> None:
    assert canonicalize(url) is None


def test_stray_percent_keeps_canonicalize_idempotent() -> None:
    # Found by the hypothesis test below: decoding %41 after a stray "%a" made "%aA",
    # which the next pass read as the escape %AA.
    assert canonicalize("http://ex.com/%a%41") == "http://ex.com/%a%41"
    assert canonicalize("http://ex.com/%%4141") == "http://ex.com/%%4141"
    assert canonicalize("http://ex.com/%7e%zz") == "http://ex.com/~%zz"


def test_join() -> None:
    base = "http://ex.com/a/b?q=1#f"
    assert join(base, "../c") == "http://ex.com/c"
    assert join(base, "?x") == "http://ex.com/a/b?x"
    assert join(base, "#g") == "http://ex.com/a/b?q=1#g"  # join keeps fragments
    assert join(base, "//other.example/p") == "http://other.example/p"
    assert join(base, "") == "http://ex.com/a/b?q=1"
    assert join(base, "mailto:x@y") == "mailto:x@y"


def test_join_returns_none_on_failure() -> None:
    assert join("http://ex.com/", "http://[bad") is None
    assert join("not a url", "x") is None
    assert join("http://ex.com/", "https://") is None


def test_resolve_link_is_join_plus_canonicalize() -> None:
    base = "http://ex.com/dir/page"
    assert resolve_link(base, " ../A%7e b#top ") == "http://ex.com/A~%20b"
    assert resolve_link(base, "HTTPS://EX.com:443/") == "https://ex.com/"
    for href in ("javascript:void(0)", "mailto:x@y", "tel:1", "ftp://h/", "http://[bad"):
        assert resolve_link(base, href) is None


def test_host_key_hostname_path_of() -> None:
    url = "http://user:pw@ex.com:8080/a/b?c=d"
    assert host_key(url) == "ex.com:8080"
    assert hostname(url) == "ex.com"
    assert path_of(url) == "/a/b?c=d"
    assert host_key("https://ex.com/") == "ex.com"
    assert host_key("http://[::1]:81/") == "[::1]:81"
    assert hostname("http://[::1]:81/") == "[::1]"
    assert hostname("http://[::1]/") == "[::1]"
    assert path_of("http://ex.com/") == "/"
    assert host_key("http://ex.com?x") == "ex.com"


def test_host_key_is_memoized_and_still_rejects_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """The event loop asks for a page's host key about five times: the regex runs once."""
    calls = []
    real = urls._AUTHORITY

    class Counting:
        def search(self, text: str) -> object:
            calls.append(text)
            return real.search(text)

    monkeypatch.setattr(urls, "_AUTHORITY", Counting())
    host_key.cache_clear()
    url = "http://memo.example:81/a?b"
    assert [host_key(url) for _ in range(5)] == ["memo.example:81"] * 5
    assert calls == [url]
    for _ in range(2):  # an error is not remembered: raised every time
        with pytest.raises(ValueError):
            host_key("no-authority")
    with pytest.raises(TypeError):
        host_key(["not", "a", "str"])  # type: ignore[arg-type]
    host_key.cache_clear()


def test_fingerprint_is_blake2b_8_little_endian() -> None:
    url = "http://ex.com/"
    digest = hashlib.blake2b(url.encode(), digest_size=8).digest()
    assert fingerprint(url) == int.from_bytes(digest, "little")
    assert 0 <= fingerprint(url) < 2**64
    assert fingerprint("http://ex.com/a") != fingerprint("http://ex.com/b")


def test_fingerprints_empty_and_dtype() -> None:
    empty = fingerprints([])
    assert empty.dtype == np.uint64 and empty.shape == (0,)
    assert fingerprints(iter(["http://a/", "http://b/"])).tolist() == [
        fingerprint("http://a/"),
        fingerprint("http://b/"),
    ]


_URL_PIECES = st.sampled_from(
    list("abcXYZ019-._~!$&'()*+,;=:@/?#[]% \t\n\\^`{|}<>\"éü\u00a0\ufffd\x00\x7f")
    + ["%2e", "%2E", "%41", "%7e", "%25", "%2f", "%zz", "%e2%82%ac", "..", ".", ":80", ":443", "@"]
)
_URLS = st.builds(
    lambda scheme, host, parts: scheme + host + "".join(parts),
    st.sampled_from(["http://", "https://", "HTTP://", "", "//", "http:", "ftp://"]),
    st.sampled_from(["ex.com", "EX.com", "bücher.de", "127.0.0.1", "[::1]", "ex.com.", "x", ""]),
    st.lists(_URL_PIECES, max_size=15),
)


@settings(max_examples=400, deadline=None)
@given(url=_URLS)
def test_canonicalize_is_idempotent_on_its_outputs(url: str) -> None:
    canonical = canonicalize(url)
    if canonical is not None:
        assert canonicalize(canonical) == canonical
        assert canonical.startswith(("http://", "https://")) and "#" not in canonical
        assert host_key(canonical) and path_of(canonical).startswith("/")


@settings(max_examples=400, deadline=None)
@given(href=st.lists(_URL_PIECES, max_size=15).map("".join))
def test_resolved_links_are_canonical(href: str) -> None:
    resolved = resolve_link("http://ex.com/a/b?x", href)
    if resolved is not None:
        assert canonicalize(resolved) == resolved


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    canonical = canonicalize(text)
    assert canonical is None or canonicalize(canonical) == canonical
    join("http://ex.com/", text)
    resolve_link("http://ex.com/", text)
    resolve_link(text, "x")
    assert 0 <= fingerprint(text) < 2**64


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(), max_size=20))
def test_fingerprints_equals_fingerprint_of_each(texts: list[str]) -> None:
    array = fingerprints(texts)
    assert array.dtype == np.uint64
    assert array.tolist() == [fingerprint(t) for t in texts]


def test_the_command_line_imports_without_numpy() -> None:
    """Every command imports this module (through the CLI's parser core); numpy costs 65-110 ms of a start
    and only the frontier and the analyses need it, so it comes with them, or with ``fingerprints``."""
    probe = "import sys, webgather.cli; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False"]
