"""webgather.robots.compact: a host's settled robots state in a few bytes, read back to the same rules."""

from __future__ import annotations

import zlib

from webgather.robots import ALLOW_ALL, DISALLOW_ALL, RobotsRules
from webgather.robots.compact import decode_state, encode_given_up, encode_rules

UA = "webgather/0.1"
TEXT = b"""# a comment line
User-agent: other
Disallow: /

User-agent: *
Disallow: /private/   # trailing comment
Allow: /private/ok
Crawl-delay: 2

Sitemap: http://h.test/sitemap.xml
"""


def test_rules_come_back_the_same_for_every_url() -> None:
    rules = RobotsRules.from_bytes(TEXT, UA)
    blob = encode_rules(rules)
    back = decode_state(blob, UA)
    assert isinstance(back, RobotsRules)
    for path in ("/", "/private/x", "/private/ok", "/public", "/robots.txt"):
        assert back.allowed("http://h.test" + path) == rules.allowed("http://h.test" + path), path
    assert back.crawl_delay_s == 2.0 and back.sitemaps == ("http://h.test/sitemap.xml",)
    assert len(blob) < len(TEXT)


def test_allow_all_and_disallow_all_take_one_byte() -> None:
    assert encode_rules(ALLOW_ALL) == b"A" and decode_state(b"A", UA) is ALLOW_ALL
    assert encode_rules(DISALLOW_ALL) == b"D" and decode_state(b"D", UA) is DISALLOW_ALL
    assert encode_rules(RobotsRules.from_bytes(b"# nothing but comments\n\n", UA)) == b"A"


def test_a_host_given_up_on_keeps_its_reason_and_detail() -> None:
    assert decode_state(encode_given_up("dns", "host does not resolve"), UA) == ("dns", "host does not resolve")


def test_an_unreadable_blob_is_none_never_a_guess() -> None:
    for blob in (b"", b"Q", b"Rnot zlib", b"R" + zlib.compress(b"\xff\xfe"), b"Xno separator", b"Aextra"):
        assert decode_state(blob, UA) is None, blob
