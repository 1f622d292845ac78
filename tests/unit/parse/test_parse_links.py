"""webgather.parse.links: which links a page yields, and that garbage never raises."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.parse.links import (
    MAX_ANCHOR_CHARS,
    Link,
    ParsedPage,
    followable,
    parse_page,
)

URL = "https://ex.com/dir/page.html"

pytestmark = pytest.mark.usefixtures("link_core")  # every test on both link paths (conftest.py)


def page(html: str, url: str = URL, **kwargs: object) -> ParsedPage:
    return parse_page(url, html.encode("utf-8"), "text/html; charset=utf-8", **kwargs)  # type: ignore[arg-type]


def urls(p: ParsedPage) -> list[str]:
    return [link.url for link in p.links]


def test_links_from_every_kind_of_element_in_document_order() -> None:
    p = page(
        "<html><head><link rel=next href=p2></head><body>"
        "<a href='a.html'>A</a><map><area href='/area' alt='Area'></map>"
        "<iframe src='/if'></iframe><img src='/img.png'><script src='/s.js'></script>"
        "<a href='z.html'>Z</a></body></html>"
    )
    assert [(link.tag, link.url, link.anchor) for link in p.links] == [
        ("link", "https://ex.com/dir/p2", ""),
        ("a", "https://ex.com/dir/a.html", "A"),
        ("area", "https://ex.com/area", "Area"),
        ("iframe", "https://ex.com/if", ""),
        ("a", "https://ex.com/dir/z.html", "Z"),
    ]


def test_frames_in_a_frameset_document() -> None:
    p = page("<html><frameset><frame src='/top'><frame src='left.html'></frameset></html>")
    assert [(link.tag, link.url) for link in p.links] == [
        ("frame", "https://ex.com/top"),
        ("frame", "https://ex.com/dir/left.html"),
    ]
    assert p.text == ""


def test_document_order_across_element_kinds() -> None:
    p = page(
        "<body><a href=/1>1</a><iframe src=/2></iframe><area href=/3>"
        "<link rel=alternate href=/4><a href=/5>5</a></body>"
    )
    assert urls(p) == [f"https://ex.com/{i}" for i in range(1, 6)]
    assert [link.tag for link in p.links] == ["a", "iframe", "area", "link", "a"]


def test_duplicates_are_kept() -> None:
    p = page("<a href=/x>one</a><a href='/x#frag'>two</a><a href=https://EX.com:443/x>three</a>")
    assert urls(p) == ["https://ex.com/x"] * 3
    assert [link.anchor for link in p.links] == ["one", "two", "three"]


def test_link_rel_filter() -> None:
    p = page(
        "<head><link rel=stylesheet href=/s.css><link rel=icon href=/i.ico>"
        "<link rel='alternate stylesheet' href=/alt.css><link rel=preload href=/pre.js>"
        "<link rel='ALTERNATE' hreflang=de href=/de><link rel=prev href=/p1>"
        "<link rel='next nofollow' href=/p3><link href=/norel></head>"
    )
    assert [(link.url, link.nofollow) for link in p.links] == [
        ("https://ex.com/de", False),
        ("https://ex.com/p1", False),
        ("https://ex.com/p3", True),
    ]


def test_canonical_is_resolved_and_not_a_link() -> None:
    p = page("<head><link rel=canonical href='/c?b=2&a=1#top'><link rel=canonical href=/second></head>")
    assert p.canonical == "https://ex.com/c?b=2&a=1"
    assert p.links == ()
    assert page("<p>no canonical</p>").canonical is None
    assert page("<link rel=canonical href='javascript:x'>").canonical is None


def test_unfollowable_schemes_and_invalid_hrefs_are_dropped() -> None:
    p = page(
        "<a href='javascript:void(0)'>j</a><a href='mailto:a@b.c'>m</a><a href='tel:1'>t</a>"
        "<a href='ftp://h/f'>f</a><a href='data:text/html,x'>d</a><a href='http://[::1'>bad</a>"
        "<a href='https://ok.example/'>ok</a>"
    )
    assert urls(p) == ["https://ok.example/"]


def test_href_whitespace_and_empty_href() -> None:
    p = page("<a href='  /sp ace\n'>s</a><a href=''>self</a><a href>bare</a>")
    assert urls(p) == ["https://ex.com/sp%20ace", URL, URL]


def test_base_href_first_one_resolved_against_url() -> None:
    p = page(
        "<head><base href='../other/'><base href='https://elsewhere.example/'></head>"
        "<a href=x.html>x</a>"
    )
    assert p.base == "https://ex.com/other/"
    assert urls(p) == ["https://ex.com/other/x.html"]


def test_base_after_links_still_applies() -> None:
    p = page("<a href=x>x</a><base href='https://b.example/d/'>")
    assert urls(p) == ["https://b.example/d/x"]


def test_base_that_is_not_http_is_ignored() -> None:
    assert page("<base href='javascript:alert(1)'><a href=x>x</a>").base == URL
    assert urls(page("<base href='http://[bad'><a href=x>x</a>")) == ["https://ex.com/dir/x"]
    assert page("<a href=x>x</a>").base == URL


def test_rel_nofollow_is_a_token() -> None:
    p = page(
        "<a rel='NoFollow noopener' href=/a>a</a><a rel='nofollowed' href=/b>b</a>"
        "<a rel=nofollow href=/c>c</a><area rel=nofollow href=/d><a href=/e>e</a>"
    )
    assert [link.nofollow for link in p.links] == [True, False, True, True, False]
    assert [link.url for link in followable(p)] == ["https://ex.com/b", "https://ex.com/e"]


def test_meta_robots() -> None:
    p = page("<meta name=ROBOTS content='NoIndex , NOFOLLOW'><a href=/a>a</a>")
    assert p.meta_noindex and p.meta_nofollow
    assert followable(p) == []
    assert len(p.links) == 1  # still reported, for the link log
    none = page("<meta name=robots content=none>")
    assert none.meta_noindex and none.meta_nofollow
    only_index = page("<meta name=robots content='noindex,follow'>")
    assert only_index.meta_noindex and not only_index.meta_nofollow
    other = page("<meta name=googlebot content=nofollow><meta name=description content=nofollow>")
    assert not other.meta_nofollow and not other.meta_noindex


def test_meta_robots_for_our_own_token() -> None:
    html = "<meta name=webgather content=nofollow><a href=/a>a</a>"
    assert not page(html).meta_nofollow
    assert page(html, robots_meta_names=("robots", "webgather")).meta_nofollow


def test_anchor_text_collapsed_bounded_and_from_image_alt() -> None:
    long_words = " ".join(["word"] * 100)
    p = page(
        f"<a href=/1>  Hello\n\t <b>big</b>   world </a><a href=/2>{long_words}</a>"
        "<a href=/3><img src=i.png alt=' The  logo '></a><a href=/4><img src=j.png></a>"
        "<area href=/5 alt='Map  area'>"
    )
    anchors = [link.anchor for link in p.links]
    assert anchors[0] == "Hello big world"
    assert len(anchors[1]) == MAX_ANCHOR_CHARS and anchors[1].startswith("word word")
    assert anchors[2:] == ["The logo", "", "Map area"]


def test_title_and_visible_text() -> None:
    p = page(
        "<html><head><title>  The\n Title </title><style>p{}</style></head><body>"
        "<script>var hidden = 1</script><noscript>nos</noscript><template>tpl</template>"
        "<p>First  para</p><p>Second</p><svg><title>icon</title></svg></body></html>"
    )
    assert p.title == "The Title"
    assert "First  para" in p.text and "Second" in p.text
    for hidden in ("hidden", "p{}", "nos", "tpl", "The Title"):
        assert hidden not in p.text
    assert p.text.startswith("First") and "para Second" in p.text


def test_want_text_false_and_text_bound() -> None:
    html = "<title>t</title><a href=/a>a</a><p>" + "x" * 5000 + "</p>"
    lean = page(html, want_text=False)
    assert lean.text == "" and lean.title == "t" and urls(lean) == ["https://ex.com/a"]
    assert len(page(html, max_text_chars=100).text) == 100


def test_max_links_bound() -> None:
    html = "".join(f"<a href=/{i}>{i}</a>" for i in range(50))
    p = page(html, max_links=10)
    assert p.links_truncated
    assert urls(p) == [f"https://ex.com/{i}" for i in range(10)]
    assert not page(html).links_truncated


def test_script_and_comment_links_are_not_links() -> None:
    p = page("<script>document.write('<a href=/js>')</script><!-- <a href=/c>c</a> --><a href=/r>r</a>")
    assert urls(p) == ["https://ex.com/r"]


def test_charset_from_meta_decodes_anchors_and_urls() -> None:
    body = "<meta charset=windows-1251><title>Привет</title><a href='/путь'>Ссылка</a>".encode(
        "cp1251"
    )
    p = parse_page("http://ru.example/", body, "text/html")
    assert p.charset == "cp1251"
    assert p.title == "Привет"
    assert p.links == (
        Link("http://ru.example/%D0%BF%D1%83%D1%82%D1%8C", "Ссылка", False, "a"),
    )


def test_header_charset_wins_over_meta_and_bom_over_both() -> None:
    body = "<meta charset=utf-8><title>café</title>".encode("latin-1")
    assert parse_page(URL, body, "text/html; charset=ISO-8859-1").title == "café"
    with_bom = b"\xef\xbb\xbf" + "<title>café</title>".encode("utf-8")
    p = parse_page(URL, with_bom, "text/html; charset=latin1")
    assert (p.title, p.charset) == ("café", "utf-8")


def test_invalid_page_url_keeps_absolute_links() -> None:
    p = parse_page("not a url", b"<a href=/rel>r</a><a href='http://abs.example/'>a</a>", None)
    assert urls(p) == ["http://abs.example/"]


GARBAGE = [
    b"",
    b"\x00" * 1000,
    bytes(range(256)) * 40,
    b"<a href='/x'",  # truncated tag
    b"<a href=/x>unclosed <b><i><a href=/y>",
    b"<<<<>>>></a></a><a href=\x00/z>\x00</a>",
    b"\xff\xfe<\x00a\x00 \x00h\x00r\x00e\x00f\x00=\x00/\x00u\x00>\x00",  # UTF-16LE with BOM
    "<a href='/\udcff'>".encode("utf-8", "surrogateescape"),
    b"<meta charset='x-no-such-charset'><a href=/ok>ok</a>",
    b"<base href><a href=/b>b</a>",
]


def test_garbage_examples_give_best_effort_pages() -> None:
    for body in GARBAGE:
        p = parse_page(URL, body, "text/html")
        assert isinstance(p, ParsedPage) and p.error is None
        for link in p.links:
            assert link.url.startswith(("http://", "https://"))
    assert urls(parse_page(URL, GARBAGE[6], None)) == ["https://ex.com/u"]
    assert urls(parse_page(URL, GARBAGE[8], None)) == ["https://ex.com/ok"]


def test_ten_megabytes_of_a_tags_is_bounded() -> None:
    start = time.perf_counter()
    p = parse_page(URL, b"<a" * 5_000_000, "text/html", want_text=False)
    assert p.links == ()
    nested = parse_page(URL, b"<a href=/x>" * 100_000, None, want_text=False, max_links=1000)
    assert nested.links_truncated and len(nested.links) == 1000
    assert time.perf_counter() - start < 10.0


@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=3000), header=st.none() | st.text(max_size=40))
def test_random_bytes_never_raise(body: bytes, header: str | None) -> None:
    p = parse_page(URL, body, header)
    assert all(isinstance(link, Link) for link in p.links)


_TAGS = st.sampled_from(
    ["<a href=", "<a rel=nofollow href=", "<base href=", "<link rel=next href=", "<iframe src=",
     "<meta name=robots content=", "<area href=", "</a>", "<title>", "<!--", "-->", "<script>",
     "'", '"', ">", "<", "/x", "javascript:", "http://h/", "\x00", "é", "&amp;", "%zz", " "]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(_TAGS, max_size=60))
def test_tag_soup_never_raises_and_links_are_canonical(parts: list[str]) -> None:
    p = parse_page(URL, "".join(parts).encode("utf-8"), "text/html")
    for link in p.links:
        assert link.url.startswith(("http://", "https://")) and "#" not in link.url
        assert len(link.anchor) <= MAX_ANCHOR_CHARS


def test_generated_page_link_count_matches_the_html() -> None:
    rng = random.Random(7)
    hrefs = [f"/p/{rng.randrange(1000)}" for _ in range(40)]
    html = "<body>" + "".join(f"<p>text</p><a href='{h}'>{h}</a>" for h in hrefs) + "</body>"
    p = page(html)
    assert urls(p) == ["https://ex.com" + h for h in hrefs]
    assert [link.anchor for link in p.links] == hrefs


def test_a_meta_refresh_is_a_link_first_and_a_refresh_to_the_page_itself_is_not() -> None:
    p = page(
        "<html><head><meta http-equiv='Refresh' content=\"0; URL='next.html'\">"
        "<meta http-equiv=refresh content='5'><meta http-equiv=refresh content='1;url=page.html#top'>"
        "<meta http-equiv=refresh content='2, url=javascript:x()'></head>"
        "<body><a href='/a'>A</a></body></html>"
    )
    assert [(link.tag, link.url) for link in p.links] == [
        ("meta", "https://ex.com/dir/next.html"), ("a", "https://ex.com/a")]


def test_meta_refresh_resolves_against_base_and_obeys_meta_nofollow() -> None:
    p = page("<base href='https://cdn.ex.com/x/'><meta http-equiv=refresh content='0;url=y'>"
             "<meta name=robots content=nofollow>")
    assert urls(p) == ["https://cdn.ex.com/x/y"]
    assert followable(p) == []


def test_meta_refresh_is_found_wherever_the_parser_puts_a_meta_element_but_in_a_template() -> None:
    from selectolax.lexbor import LexborHTMLParser

    from webgather.parse.refresh import meta_refresh_hrefs

    html = ("<META HTTP-EQUIV=' Refresh ' CONTENT='1;url=a'><template><meta http-equiv=refresh content='0;url=t'>"
            "</template><svg><meta http-equiv=refresh content='0;url=s'></svg><noscript><meta http-equiv=refresh "
            "content='0;url=n'></noscript><textarea><meta http-equiv=refresh content='0;url=x'></textarea>"
            "<p><meta http-equiv=refresh><meta name=refresh content='0;url=y'><meta http-equiv content='0;url=z'>")
    assert meta_refresh_hrefs(LexborHTMLParser(html)) == ["1;url=a", "0;url=s", "0;url=n", ""]


@pytest.mark.parametrize(("content", "url"), [
    ("0; url=a.html", "a.html"), ("0;URL = 'b c.html'", "b c.html"), ("3,url=\"q\"", "q"),
    ("0; x.html", "x.html"), ("1.5; url=z", "z"), ("5", None), ("", None), ("x; url=a", None),
    ("0; url='unterminated", "unterminated"), ("0 sp.html", "sp.html"), ("5x", None), ("  0  ;  url  =  sp  ", "sp"),
])
def test_refresh_url_reads_the_standards_declarative_refresh(content: str, url: str | None) -> None:
    from webgather.parse.refresh import refresh_url

    assert refresh_url(content) == url


def test_requisites_only_when_asked_and_never_as_links() -> None:
    html = ("<html><head><link rel='stylesheet preload' href='s.css'><link rel='shortcut icon' href='/f.ico'>"
            "<link rel=modulepreload href=m.js><link rel=manifest href=/app.webmanifest><link rel=next href=p2>"
            "<script src='//cdn.ex.com/a.js'></script><style>@import 'i.css'; b{background:url(data:,x)}</style></head>"
            "<body style='background:url(\"/bg.png\")'><picture><source srcset='w.webp 1x, w2.webp 2x'>"
            "<img src='i.png' srcset='i2.png 2x'></picture><video poster=p.jpg src=v.mp4><source src=v.webm></video>"
            "<audio src=a.mp3></audio><input type=IMAGE src=go.png><input type=text src=no.png>"
            "<object data=o.swf></object><embed src=e.swf><img src='i.png'></body></html>")
    assert page(html).requisites == ()
    got = page(html, want_requisites=True)
    assert [url.rsplit("/", 1)[-1] for url, _ in got.requisites] == [
        "s.css", "f.ico", "m.js", "app.webmanifest", "a.js", "i.css", "bg.png", "w.webp", "w2.webp", "i.png",
        "i2.png", "p.jpg", "v.mp4", "v.webm", "a.mp3", "go.png", "o.swf", "e.swf"]
    assert dict(got.requisites)["https://cdn.ex.com/a.js"] == "script"
    assert urls(got) == ["https://ex.com/dir/p2"]  # the link graph stays pages


def test_stylesheet_requisites_read_imports_fonts_and_urls_not_comments_or_strings() -> None:
    from webgather.parse.requisites import css_urls, srcset_urls, stylesheet_requisites

    css = ('@charset "utf-8"; @import url("a.css") screen; @import \'b.css\';\n'
           '@font-face { font-family: X; src: url(f.woff2) format("woff2"), url( "g.woff" ) }\n'
           '/* url(comment.png) */ h1 { background: url(../h.png); content: "url(string.png)" }\n'
           '@media print { p { background-image: url(\'print.png\') } }')
    assert css_urls(css) == ["a.css", "b.css", "f.woff2", "g.woff", "../h.png", "print.png"]
    got = stylesheet_requisites("http://ex.com/css/x.css", css.encode())
    assert [u for u, _ in got] == ["http://ex.com/css/a.css", "http://ex.com/css/b.css", "http://ex.com/css/f.woff2",
                                   "http://ex.com/css/g.woff", "http://ex.com/h.png", "http://ex.com/css/print.png"]
    assert srcset_urls(" a.png 1x,b,c.png 2x ,, d.png, e.png 100w") == ["a.png", "b,c.png", "d.png", "e.png"]
    assert css_urls("(" * 50_000) == [] and css_urls("url(") == []


VALID_CSS = [
    '@charset "utf-8"; @import url("a.css") screen; @import \'b.css\';\n@font-face { font-family: X; src: '
    'url(f.woff2) format("woff2"), url( "g.woff" ) }\n/* url(comment.png) */ h1 { background: url(../h.png); '
    'content: "url(string.png)" }\n@media print { p { background-image: url(\'print.png\') } }',
    'a{b:url(x\\)y.png)} c{d:URL("q\\"r.png")} @IMPORT "z.css"; e{f:url()} g{h:url(  )}',
    "@import url(a) url(b);", "x{y:image-set(url(a.png) 1x, 'b.png' 2x)}", "a{b:xurl(c) -url(d) url(e)}",
    '"unterminated url(a)\n b{c:url(d)}', "/* open comment url(x)", "@supports (display:grid) { a { b: url(s.png) } }",
    ".a::after{content:'\\'url(no)'; background:url(yes.png)}",
]


@pytest.mark.parametrize("css", VALID_CSS)
def test_the_fast_css_scan_finds_what_tinycss2_reading_everything_finds(css: str) -> None:
    from webgather.parse.requisites import css_urls, css_urls_whole

    assert css_urls(css) == css_urls_whole(css)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["url(", "@import", '"', "'", "/*", "*/", ")", "(", ";", "{", "\\", "\n",
                                  " ", "a.png", "x", "URL("]), max_size=40))
def test_the_css_scan_never_raises_and_finds_urls_only_at_landmarks(pieces: list[str]) -> None:
    from webgather.parse.requisites import css_urls

    css = "".join(pieces)
    found = css_urls(css)
    assert all(isinstance(url, str) and url.strip() for url in found)
    assert len(found) <= css.lower().count("url(") + css.lower().count("@import")
