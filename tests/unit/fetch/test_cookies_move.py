"""webgather.fetch.cookies: a host's cookies leave one jar and enter another (a bucket changing node)."""

from __future__ import annotations

import json

import pytest

from webgather.fetch.cookies import CrawlCookies, decode_cookies, encode_cookies


def _set(jar: CrawlCookies, url: str, *cookies: str) -> None:
    jar.store(url, tuple(("Set-Cookie", c) for c in cookies))


def test_a_hosts_cookies_are_its_host_only_and_matching_domain_ones_whatever_the_port() -> None:
    jar = CrawlCookies()
    _set(jar, "http://www.ex.com:8080/a/b", "host=1; Path=/", "deep=2", "dom=3; Domain=ex.com; Path=/")
    _set(jar, "http://shop.ex.com/", "shop=4; Path=/")
    assert sorted(c.name for c in jar.of_host("www.ex.com:8080")) == ["deep", "dom", "host"]
    assert sorted(c.name for c in jar.of_host("shop.ex.com")) == ["dom", "shop"]
    assert jar.of_host("other.org") == [] and jar.of_host("[::1]:80") == []


def test_cookies_moved_to_another_jar_are_sent_there_and_gone_from_the_first() -> None:
    old, new = CrawlCookies(), CrawlCookies()
    _set(old, "http://www.ex.com/", "host=1; Path=/", "dom=3; Domain=ex.com; Path=/")
    moved = decode_cookies(encode_cookies(old.of_host("www.ex.com")))
    assert new.install(moved) == 2
    assert new.header("http://www.ex.com/x") == "host=1; dom=3"
    assert old.forget_host("www.ex.com") == 1  # the Domain cookie may serve the old node's other hosts
    assert old.header("http://www.ex.com/x") == "dom=3" and old.header("http://shop.ex.com/") == "dom=3"
    assert new.install(decode_cookies(encode_cookies(old.of_host("www.ex.com")))) == 1
    assert new.header("http://www.ex.com/x") == "host=1; dom=3"  # same domain, path and name: replaced


def test_an_installed_cookie_replaces_its_older_self_and_expired_ones_stay_out() -> None:
    old, new = CrawlCookies(), CrawlCookies()
    _set(new, "http://ex.com/", "sid=stale; Path=/")
    _set(old, "http://ex.com/", "sid=fresh; Path=/", "gone=1; Path=/; Max-Age=100")
    cookies = old.of_host("ex.com")
    for cookie in cookies:
        if cookie.name == "gone":
            cookie.expires = 1000  # long past
    assert new.install(cookies) == 1
    assert new.header("http://ex.com/") == "sid=fresh"


def test_install_keeps_the_limits_of_a_shard() -> None:
    old, new = CrawlCookies(), CrawlCookies(max_cookies_per_host=2)
    _set(new, "http://ex.com/", "mine=0; Path=/")
    _set(old, "http://ex.com/", "a=1; Path=/", "b=2; Path=/")
    new.install(old.of_host("ex.com"))
    assert new.header("http://ex.com/") == "a=1; b=2" and len(new) == 2


@pytest.mark.parametrize("data, match", [
    (b"\xff", "not a cookie list"),
    (b"[]", "not a cookie list"),
    (b'{"cookies": {}}', "not a cookie list"),
    (b'{"cookies": [[1, 2]]}', "list of 16"),
    (json.dumps({"cookies": [[0, 5, "v", None, False, "h", False, False, "/", True, False, None, True, None, None,
                              {}]]}).encode(), "name is int"),
    (json.dumps({"cookies": [[0, "n", "v", None, 1, "h", False, False, "/", True, False, None, True, None, None,
                              {}]]}).encode(), "port_specified is int"),
    (json.dumps({"cookies": [[True, "n", "v", None, False, "h", False, False, "/", True, False, None, True, None,
                              None, {}]]}).encode(), "version is bool"),
    (json.dumps({"cookies": [[0, "n", "v", None, False, "h", False, False, "/", True, False, None, True, None, None,
                              {"a": 1}]]}).encode(), "rest"),
    (json.dumps({"cookies": [[0, "n", "v", None, False, "", False, False, "/", True, False, None, True, None, None,
                              {}]]}).encode(), "a domain"),
])
def test_decoding_checks_every_value(data: bytes, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        decode_cookies(data)


def test_what_save_wrote_before_still_loads() -> None:
    jar = CrawlCookies()
    _set(jar, "http://ex.com/", "sid=1; Path=/; HttpOnly")
    row = [0, "sid", "1", None, False, "ex.com", False, False, "/", True, False, None, True, None, None,
           {"HttpOnly": None}]
    assert decode_cookies(json.dumps({"cookies": [row]}).encode())[0].name == "sid"  # the earlier layout
    assert json.loads(encode_cookies(jar.of_host("ex.com")))["cookies"] == [row]
