"""The pywb collection over a crawl's WARCs: relocated, merged, sorted index lines and a config naming them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webgather.errors import StoreError
from webgather.store.cdxj import cdxj_line, parse_line
from webgather.store.pywbcoll import build_collection, crawl_indexes, pywb_config, relocate_line

_DATE = "2026-11-25T17:00:0{}Z"


def _line(url: str, second: int, filename: str, mime: str = "text/html", status: int = 200) -> str:
    return cdxj_line(url, _DATE.format(second), mime, status, "sha1:ABC", 100, 10 * second, filename)


def test_relocate_line_prefixes_only_the_filename() -> None:
    tricky = 'http://e.com/?q="filename":"x'  # the URL's quotes are escaped in the JSON block
    line = _line(tricky, 1, "webgather-w0-00000.warc.gz")
    moved = parse_line(relocate_line(line, "nodes/w0/warc/"))
    assert (moved.url, moved.filename) == (tricky, "nodes/w0/warc/webgather-w0-00000.warc.gz")
    with pytest.raises(StoreError):
        relocate_line("com,e)/ 20261125170001 {}\n", "warc/")


def test_a_cluster_dir_becomes_one_sorted_index_with_paths_under_dir(tmp_path: Path) -> None:
    crawl = tmp_path / "crawl"
    for node, lines in {
        "w0": [_line("http://b.test/robots.txt", 1, "webgather-w0-00000.warc.gz", "text/plain"),
               _line("http://b.test/", 2, "webgather-w0-00000.warc.gz")],
        "w1": [_line("http://a.test/x", 3, "webgather-w1-00000.warc.gz", status=404),
               _line("http://a.test/", 4, "webgather-w1-00001.warc.gz")],
    }.items():
        (crawl / "nodes" / node / "warc").mkdir(parents=True)
        # a partial last line (a crash while writing) is left out
        (crawl / "nodes" / node / "warc" / "index.cdxj").write_text("".join(lines) + 'com,cut)/ 2026 {"url"')
    assert [p.parent.parent.name for p in crawl_indexes(crawl)] == ["w0", "w1"]
    collection = build_collection(crawl, tmp_path / "root")
    entries = [parse_line(line) for line in (tmp_path / "root" / "index.cdxj").read_text().splitlines(keepends=True)]
    assert [e.key for e in entries] == sorted(e.key for e in entries)
    assert sorted(e.filename for e in entries) == [
        "nodes/w0/warc/webgather-w0-00000.warc.gz", "nodes/w0/warc/webgather-w0-00000.warc.gz",
        "nodes/w1/warc/webgather-w1-00000.warc.gz", "nodes/w1/warc/webgather-w1-00001.warc.gz",
    ]
    assert (collection.captures, collection.warc_files) == (4, 3)
    assert collection.first_page == ("20261125170002", "http://b.test/")  # write order, not key order
    config = (tmp_path / "root" / "config.yaml").read_text()
    assert f"index: {json.dumps(str(tmp_path / 'root' / 'index.cdxj'))}" in config
    assert f"archive_paths: {json.dumps(str(crawl.resolve()) + '/')}" in config
    assert not list(crawl.rglob("config.yaml")), "nothing is written into the crawl"


def test_one_node_dir_and_its_paths(tmp_path: Path) -> None:
    (tmp_path / "warc").mkdir()
    (tmp_path / "warc" / "index.cdxj").write_text(_line("http://a.test/", 1, "webgather-n0-00000.warc.gz"))
    collection = build_collection(tmp_path, tmp_path / "root")
    [entry] = [parse_line(line) for line in (tmp_path / "root" / "index.cdxj").read_text().splitlines(keepends=True)]
    assert entry.filename == "warc/webgather-n0-00000.warc.gz" and collection.captures == 1


def test_no_index_or_an_empty_one_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="holds no WARC index"):
        build_collection(tmp_path, tmp_path)
    (tmp_path / "warc").mkdir()
    (tmp_path / "warc" / "index.cdxj").write_text("")
    with pytest.raises(StoreError, match="archived no response"):
        build_collection(tmp_path, tmp_path)


def test_config_paths_are_quoted_whatever_they_hold() -> None:
    text = pywb_config(Path("/tmp/a b/#x: y/index.cdxj"), Path("/data/it's"))
    assert 'index: "/tmp/a b/#x: y/index.cdxj"' in text
    assert 'archive_paths: "/data/it\'s/"' in text


def test_a_304_revisit_points_at_its_original_or_is_left_out() -> None:
    from webgather.store.pywbcoll import repoint_not_modified

    original = cdxj_line("http://a.test/p", _DATE.format(1), "text/html", 200, "sha1:D1", 900, 100, "f0.warc.gz")
    other = cdxj_line("http://a.test/p", _DATE.format(2), "text/html", 200, "sha1:D2", 800, 1100, "f0.warc.gz")
    not_modified = cdxj_line("http://a.test/p", _DATE.format(3), "warc/revisit", 304, "sha1:D1", 500, 40, "f1.warc.gz")
    same_digest = cdxj_line("http://a.test/p", _DATE.format(4), "warc/revisit", 200, "sha1:D2", 500, 540, "f1.warc.gz")
    orphan = cdxj_line("http://b.test/q", _DATE.format(5), "warc/revisit", 304, "sha1:D1", 500, 1040, "f1.warc.gz")
    lines = sorted([original, other, not_modified, same_digest, orphan])
    out = [parse_line(line) for line in repoint_not_modified(lines)]
    assert [(e.url, e.timestamp, e.mime, e.status, e.filename, e.offset) for e in out] == [
        ("http://a.test/p", "20261125170001", "text/html", 200, "f0.warc.gz", 100),
        ("http://a.test/p", "20261125170002", "text/html", 200, "f0.warc.gz", 1100),
        ("http://a.test/p", "20261125170003", "text/html", 200, "f0.warc.gz", 100),  # the 304: D1's response
        ("http://a.test/p", "20261125170004", "warc/revisit", 200, "f1.warc.gz", 540),  # pywb resolves these
    ]  # b.test's 304 has no original in the archive: left out
