"""A canonical URL's request target by one regex (issue 18): no ``urlsplit`` for a plain URL,
and the same target as ``urlsplit`` gives wherever the regex answers."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.errors import InvalidUrl
from webgather.fetch import request
from webgather.fetch.request import WireTarget, wire_target


def test_a_plain_url_is_split_without_urlsplit(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_url: str) -> None:
        raise AssertionError("urlsplit split a plain URL")

    monkeypatch.setattr(request, "urlsplit", refuse)
    assert wire_target("http://h1.bench.test:8080/p/a.html?x=1") == WireTarget(
        "http://h1.bench.test:8080/p/a.html?x=1", "http", "h1.bench.test", 8080, "h1.bench.test:8080", "/p/a.html?x=1")
    assert wire_target("https://127.0.0.1:443?q") == WireTarget(
        "https://127.0.0.1:443?q", "https", "127.0.0.1", 443, "127.0.0.1", "/?q")
    assert wire_target("http://a.test").path == "/"


def test_urls_the_regex_declines_still_go_through_urlsplit() -> None:
    assert wire_target("http://u@h.test/x").host_header == "h.test"
    assert wire_target("http://[::1]:81/").host_header == "[::1]:81"
    with pytest.raises(InvalidUrl):
        wire_target("http://h.test:70000/")


_PIECES = st.sampled_from(["a", "B", "1", ".", "-", ":", ":80", ":443", ":0", ":65536", ":8080", "/", "?", "#",
                           "@", "[", "]", "%", "x", "~", "\"", "::1"])


def _slow(url: str, monkeypatch: pytest.MonkeyPatch) -> WireTarget | str:
    with monkeypatch.context() as patch:
        patch.setattr(request, "_PLAIN_TARGET", re.compile(r"(?!)"))
        try:
            return wire_target(url)
        except InvalidUrl:
            return "invalid"


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["http://", "https://"]), st.lists(_PIECES, max_size=10).map("".join))
def test_the_regex_agrees_with_urlsplit(scheme: str, rest: str) -> None:
    url = scheme + rest
    if request._PLAIN_TARGET.match(url) is None:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        slow = _slow(url, monkeypatch)
    try:
        fast: WireTarget | str = wire_target(url)
    except InvalidUrl:
        fast = "invalid"
    assert fast == slow
