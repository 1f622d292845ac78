"""SURT keys and CDXJ lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webgather.errors import CorruptState, StoreError
from webgather.store.cdxj import cdxj_line, parse_line, read_index, sort_index, surt, timestamp14


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://www.archive.org/", "org,archive)/"),
        ("http://archive.org/", "org,archive)/"),
        ("http://archive.org/goo/", "org,archive)/goo"),  # as pywb: a trailing slash dropped
        ("http://archive.org/goo/?b&a", "org,archive)/goo?a&b"),  # query arguments sorted
        ("https://Example.COM/A/B?Q=1#frag", "com,example)/a/b?q=1"),
        ("http://example.com", "com,example)/"),
        ("http://example.com?x", "com,example)/?x"),
        ("http://example.com/?", "com,example)/"),
        ("http://www2.sub.example.co.uk:8080/p", "uk,co,example,sub:8080)/p"),
        ("http://user:pw@example.com/", "com,example)/"),
        ("http://127.0.0.1:8000/x", "1,0,0,127:8000)/x"),  # IP addresses reversed too
        ("http://example.com:80/%7Ea/./b/../c", "com,example)/~a/c"),
        ("http://[::1]:8000/x", "::1:8000)/x"),
        ("http://wwwexample.com/", "com,wwwexample)/"),
    ],
)
def test_surt(url: str, key: str) -> None:
    assert surt(url) == key


def test_timestamp14() -> None:
    assert timestamp14("2023-11-14T22:13:20Z") == "20231114221320"
    assert timestamp14("2023-11-14T22:13:20.123456Z") == "20231114221320"
    with pytest.raises(StoreError):
        timestamp14("yesterday")


def test_line_follows_the_pywb_convention_and_round_trips() -> None:
    line = cdxj_line("http://example.com/a", "2023-11-14T22:13:20Z", "text/html", 200, "sha1:ABC", 456, 359, "f.warc.gz")
    key, stamp, block = line.rstrip("\n").split(" ", 2)
    assert (key, stamp) == ("com,example)/a", "20231114221320")
    assert json.loads(block) == {
        "url": "http://example.com/a", "mime": "text/html", "status": "200", "digest": "ABC",
        "length": "456", "offset": "359", "filename": "f.warc.gz",
    }
    entry = parse_line(line)
    assert (entry.status, entry.length, entry.offset, entry.digest) == (200, 456, 359, "ABC")
    assert json.loads(cdxj_line("http://e.com/", "2023-11-14T22:13:20Z", "", 304, "", 1, 2, "f").split(" ", 2)[2])["mime"] == "unk"
    with pytest.raises(CorruptState):
        parse_line("com,example)/ 2023 {not json}")


def test_read_and_sort_index(tmp_path: Path) -> None:
    urls = ["http://b.com/", "http://a.com/z", "http://a.com/a", "http://www.a.com/a"]
    lines = [cdxj_line(u, f"2023-11-14T22:13:2{i}Z", "text/html", 200, "X", 1, i, "f") for i, u in enumerate(urls)]
    index = tmp_path / "index.cdxj"
    index.write_text("".join(lines) + lines[0][:20])
    assert [e.url for e in read_index(index)] == urls
    sorted_path = sort_index(tmp_path)
    keys = [(e.key, e.timestamp) for e in read_index(sorted_path)]
    assert keys == sorted(keys) and len(keys) == 4
    assert keys[0] == ("com,a)/a", "20231114221322")
