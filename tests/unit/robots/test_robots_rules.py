"""webgather.robots.parse: RFC 9309 rules for our product token, limits, garbage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.config import DEFAULT_USER_AGENT
from webgather.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    RobotsRules,
    is_allowed,
    product_token,
    rules_for_response,
)

UA = DEFAULT_USER_AGENT  # "webgather/0.1 (+https://...)"
SITE = "http://site.example"

ROBOTS = b"""# comment line
User-agent: otherbot
Disallow: /

User-agent: WebGather
Disallow: /private
Allow: /private/open
Disallow: /*.pdf$
Crawl-delay: 2.5

User-agent: *
Disallow: /tmp
Sitemap: http://site.example/sitemap.xml
Sitemap: /relative-sitemap.xml
"""


def rules(body: bytes = ROBOTS, ua: str = UA) -> RobotsRules:
    return RobotsRules.from_bytes(body, ua)


def test_product_token() -> None:
    assert product_token(UA) == "webgather"
    assert product_token("WebGather") == "webgather"
    assert product_token("my_bot-2/1.0") == "my_bot-"
    assert product_token("  Foo Bar") == "foo"
    assert product_token("/1.0") == ""
    assert product_token("") == ""


def test_our_group_applies_by_product_token() -> None:
    r = rules()
    assert not r.allowed(SITE + "/private/x")
    assert r.allowed(SITE + "/private/open/y")  # longest match wins
    assert not r.allowed(SITE + "/doc.pdf")
    assert r.allowed(SITE + "/doc.pdf?download=1")  # "$" anchors the end
    assert r.allowed(SITE + "/tmp/x")  # the "*" group is not ours
    assert r.allowed(SITE + "/")
    assert r.crawl_delay_s == 2.5


def test_rules_are_read_only() -> None:
    r = rules()
    for name, value in (("crawl_delay_s", 0.0), ("sitemaps", ()), ("anything", 1)):
        with pytest.raises(AttributeError):
            setattr(r, name, value)
    assert r.crawl_delay_s == 2.5


def test_star_group_when_none_names_us() -> None:
    r = rules(ua="somebody/1.0")
    assert not r.allowed(SITE + "/tmp/x")
    assert r.allowed(SITE + "/private/x")
    assert r.crawl_delay_s is None
    assert not rules(ua="otherbot").allowed(SITE + "/anything")


def test_groups_naming_us_twice_are_merged() -> None:
    body = b"User-agent: webgather\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\nUser-agent: webgather\nDisallow: /b\n"
    r = rules(body)
    assert not r.allowed(SITE + "/a") and not r.allowed(SITE + "/b") and r.allowed(SITE + "/c")


def test_several_user_agents_share_a_group() -> None:
    body = b"User-agent: a\nUser-agent: webgather\nDisallow: /shared\n"
    assert not rules(body).allowed(SITE + "/shared/1")


def test_allow_wins_a_tie_and_empty_disallow_allows() -> None:
    assert rules(b"User-agent: *\nDisallow: /p\nAllow: /p\n").allowed(SITE + "/p")
    assert rules(b"User-agent: *\nDisallow:\n").allowed(SITE + "/x")


def test_percent_encoding_is_compared_normalized() -> None:
    r = rules(b"User-agent: *\nDisallow: /caf%C3%A9\nDisallow: /a%3cb\n")
    assert not r.allowed(SITE + "/caf%C3%A9/menu")
    assert not r.allowed(SITE + "/a%3Cb")


def test_sitemaps_are_listed_as_written() -> None:
    assert rules().sitemaps == ("http://site.example/sitemap.xml", "/relative-sitemap.xml")
    assert ALLOW_ALL.sitemaps == () and DISALLOW_ALL.sitemaps == ()


def test_robots_txt_itself_is_always_allowed() -> None:
    everything = rules(b"User-agent: *\nDisallow: /\n")
    assert not everything.allowed(SITE + "/")
    assert everything.allowed(SITE + "/robots.txt")
    assert DISALLOW_ALL.allowed(SITE + "/robots.txt")
    assert DISALLOW_ALL.allowed("/robots.txt")
    assert not DISALLOW_ALL.allowed(SITE + "/robots.txt.bak")
    assert not DISALLOW_ALL.allowed(SITE + "/")
    assert ALLOW_ALL.allowed(SITE + "/anything")


def test_bom_and_crlf_and_invalid_utf8() -> None:
    body = b"\xef\xbb\xbfUser-agent: webgather\r\nDisallow: /x\xff\r\nDisallow: /y\r\n"
    r = rules(body)
    assert not r.allowed(SITE + "/y")
    assert not r.allowed(SITE + "/x%EF%BF%BD")  # the invalid byte became U+FFFD


def test_max_bytes_drops_the_cut_line_and_everything_after() -> None:
    head = b"User-agent: *\nDisallow: /a\n"
    body = head + b"Disallow: /bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n"
    r = RobotsRules.from_bytes(body, UA, max_bytes=len(head) + 10)
    assert not r.allowed(SITE + "/a")
    assert r.allowed(SITE + "/b")  # "Disallow: /" of a half-read line would block all
    whole = RobotsRules.from_bytes(body, UA, max_bytes=len(body))
    assert not whole.allowed(SITE + "/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
    assert RobotsRules.from_bytes(b"User-agent: *\nDisallow: /\n", UA, max_bytes=5).allowed(SITE + "/")


def test_default_limit_is_500_kib() -> None:
    filler = b"# " + b"x" * 1000 + b"\n"
    body = filler * 600 + b"User-agent: *\nDisallow: /late\n"  # the rule sits past 600 KB
    assert rules(body).allowed(SITE + "/late")
    assert not RobotsRules.from_bytes(body, UA, max_bytes=len(body)).allowed(SITE + "/late")


def test_garbage_allows_everything() -> None:
    for body in (b"", b"<html><body>Not Found</body></html>", bytes(range(256)) * 50, b"\x00" * 999):
        r = rules(body)
        assert r.allowed(SITE + "/any/path") and r.crawl_delay_s is None


def test_bad_crawl_delay_is_ignored() -> None:
    for value in (b"soon", b"-1", b"nan", b"inf", b"1e999"):
        assert rules(b"User-agent: *\nCrawl-delay: " + value + b"\n").crawl_delay_s is None


def test_unsplittable_url_is_not_allowed() -> None:
    assert not rules().allowed("http://[bad/private")


def test_rules_for_response_status_table() -> None:
    body = b"User-agent: *\nDisallow: /x\n"
    got = rules_for_response(200, body, UA)
    assert got is not None and not got.allowed(SITE + "/x")
    assert rules_for_response(206, body, UA) is not None
    for status in (301, 399, 400, 401, 403, 404, 410, 451):
        assert rules_for_response(status, body, UA) is ALLOW_ALL
    for unavailable in (None, 100, 429, 500, 503, 599):
        assert rules_for_response(unavailable, body, UA) is None


def test_is_allowed_helper() -> None:
    text = ROBOTS.decode()
    assert not is_allowed(text, UA, SITE + "/private/a")
    assert is_allowed(text, UA, SITE + "/public")
    assert not is_allowed(text, "otherbot/2.0", SITE + "/public")
    assert is_allowed(text, "otherbot/2.0", SITE + "/robots.txt")


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=2000), path=st.text(max_size=40))
def test_random_bodies_never_raise(body: bytes, path: str) -> None:
    r = rules(body)
    assert isinstance(r.allowed(SITE + "/" + path), bool)
    assert r.crawl_delay_s is None or r.crawl_delay_s >= 0


_LINES = st.sampled_from(
    ["User-agent: *", "User-agent: webgather", "User-agent: web", "Disallow: /", "Disallow: /a*b$",
     "Allow: /a", "Crawl-delay: 3", "Sitemap: http://s/x", "Disallow: %zz", "Allow: $", "#", "", ":"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_LINES, max_size=20), path=st.sampled_from(["/", "/a", "/ab", "/robots.txt"]))
def test_structured_robots_never_raise_and_robots_txt_stays_allowed(
    lines: list[str], path: str
) -> None:
    r = RobotsRules.from_text("\n".join(lines), UA)
    allowed = r.allowed(SITE + path)
    assert allowed or path != "/robots.txt"
