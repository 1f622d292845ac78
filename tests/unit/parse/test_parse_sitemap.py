"""webgather.parse.sitemap: urlset, sitemapindex, text; bounds; garbage and bombs."""

from __future__ import annotations

import gzip
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.parse import SitemapDoc, parse_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str, extra: str = "") -> bytes:
    body = "".join(f"<url><loc>{loc}</loc><lastmod>2024-01-01</lastmod></url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}{extra}>{body}</urlset>'.encode()


def test_urlset_locs_in_order_and_canonical() -> None:
    doc = parse_sitemap(urlset("http://EX.com/a", " https://ex.com:443/b#frag ", "http://ex.com/%7Ec"))
    assert doc == SitemapDoc(["http://ex.com/a", "https://ex.com/b", "http://ex.com/~c"], [])


def test_sitemapindex_locs_are_sitemaps() -> None:
    body = (
        f"<sitemapindex {NS}><sitemap><loc>http://ex.com/s1.xml.gz</loc></sitemap>"
        "<sitemap><loc>http://ex.com/s2.xml</loc><lastmod>2024</lastmod></sitemap></sitemapindex>"
    ).encode()
    assert parse_sitemap(body) == SitemapDoc([], ["http://ex.com/s1.xml.gz", "http://ex.com/s2.xml"])


def test_namespaces_are_optional_and_prefixes_resolved() -> None:
    assert parse_sitemap(b"<urlset><url><loc>http://ex.com/x</loc></url></urlset>").urls == [
        "http://ex.com/x"
    ]
    prefixed = (
        b'<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sm:url><sm:loc>http://ex.com/p</sm:loc></sm:url></sm:urlset>"
    )
    assert parse_sitemap(prefixed).urls == ["http://ex.com/p"]


def test_image_and_video_extension_locs_are_not_pages() -> None:
    body = urlset(
        "http://ex.com/page",
        extra=' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"',
    ).replace(
        b"</loc>", b"</loc><image:image><image:loc>http://ex.com/pic.jpg</image:loc></image:image>"
    )
    assert parse_sitemap(body).urls == ["http://ex.com/page"]


def test_entities_cdata_and_comments() -> None:
    body = urlset(
        "http://ex.com/q?a=1&amp;b=2",
        "http://ex.com/&#x41;&#66;&bogus;",
        "<![CDATA[http://ex.com/cdata?a=1&b=2]]>",
        extra="",
    ).replace(b"</urlset>", b"<!-- <url><loc>http://ex.com/hidden</loc></url> --></urlset>")
    assert parse_sitemap(body).urls == [
        "http://ex.com/q?a=1&b=2",
        "http://ex.com/AB&bogus;",
        "http://ex.com/cdata?a=1&b=2",
    ]


def test_invalid_locations_are_counted_not_kept() -> None:
    doc = parse_sitemap(urlset("/relative", "mailto:x@y", "", "ftp://h/f", "http://ok.example/"))
    assert doc.urls == ["http://ok.example/"]
    assert doc.invalid == 4


def test_text_sitemap() -> None:
    body = b"\xef\xbb\xbfhttp://ex.com/1\r\n\n  https://ex.com/2  \nnot a url\nHTTP://EX.COM/3\n"
    assert parse_sitemap(body) == SitemapDoc(
        ["http://ex.com/1", "https://ex.com/2", "http://ex.com/3"], [], invalid=1
    )


def test_gzip_body_is_inflated_including_several_members() -> None:
    body = gzip.compress(urlset("http://ex.com/a")[:-10]) + gzip.compress(b"</urlset>")
    assert parse_sitemap(gzip.compress(urlset("http://ex.com/a"))).urls == ["http://ex.com/a"]
    assert parse_sitemap(body).urls == ["http://ex.com/a"]
    assert parse_sitemap(b"\x1f\x8b\x08garbage") == SitemapDoc([], [], invalid=0)


def test_max_urls_bound() -> None:
    doc = parse_sitemap(urlset(*(f"http://ex.com/{i}" for i in range(30))), max_urls=10)
    assert doc.urls == [f"http://ex.com/{i}" for i in range(10)] and doc.truncated
    assert not parse_sitemap(urlset("http://ex.com/1"), max_urls=1).truncated
    text = parse_sitemap(b"".join(b"http://ex.com/%d\n" % i for i in range(30)), max_urls=5)
    assert len(text.urls) == 5 and text.truncated


def test_max_bytes_bound_and_truncated_xml() -> None:
    body = urlset(*(f"http://ex.com/{i}" for i in range(100)))
    cut = parse_sitemap(body, max_bytes=len(body) // 2)
    assert cut.truncated and 0 < len(cut.urls) < 100
    assert cut.urls == [f"http://ex.com/{i}" for i in range(len(cut.urls))]


def test_gzip_bomb_is_bounded() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * 20_000_000)
    start = time.perf_counter()
    doc = parse_sitemap(bomb, max_bytes=1_000_000)
    assert doc.truncated and doc.urls == []
    assert time.perf_counter() - start < 2.0


def test_entity_expansion_is_never_performed() -> None:
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + b"".join(b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10) for i in range(1, 10))
        + b"]><urlset><url><loc>http://ex.com/&lol9;</loc></url></urlset>"
    )
    assert parse_sitemap(laughs).urls == ["http://ex.com/&lol9;"]


def test_garbage_gives_empty_docs() -> None:
    for body in (b"", b"   ", b"<html><body>404</body></html>", bytes(range(256)) * 100, b"<loc" * 100_000):
        doc = parse_sitemap(body)
        assert doc.urls == [] and doc.sitemaps == []


def test_unclosed_tags_and_comments_stay_linear() -> None:
    start = time.perf_counter()
    parse_sitemap(b"<urlset>" + b"<url><loc>" * 200_000)
    parse_sitemap(b"<urlset>" + b"<!--" * 200_000)
    parse_sitemap(b"<urlset>" + b"<loc><![CDATA[" * 200_000)
    assert time.perf_counter() - start < 3.0


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=3000))
def test_random_bytes_never_raise(body: bytes) -> None:
    doc = parse_sitemap(body)
    assert all(u.startswith(("http://", "https://")) for u in doc.urls + doc.sitemaps)


_PIECES = st.sampled_from(
    ["<urlset>", "<sitemapindex>", "<url>", "<sitemap>", "<loc>", "</loc>", "<x:loc>", "http://h/",
     "&amp;", "&#0;", "&#xD800;", "&#99999999;", "<![CDATA[", "]]>", "<!--", "-->", "\n", "é", "\x00"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_PIECES, max_size=40))
def test_xml_soup_never_raises(parts: list[str]) -> None:
    doc = parse_sitemap("".join(parts).encode("utf-8"))
    assert all(u.startswith(("http://", "https://")) for u in doc.urls + doc.sitemaps)
