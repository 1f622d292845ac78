"""Crawl log, link log, link graph and summary: round trips and crash tails."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from webgather.errors import AnalysisError, CorruptState, StoreError
from webgather.store.crawllog import CrawlLog, read_crawl_log
from webgather.store.graphread import read_link_graph
from webgather.store.linklog import EDGE_DTYPE, LinkLog, read_anchors, read_edges
from webgather.store.summary import read_summary, write_summary
from webgather.urls import fingerprint, host_key


def _link(url: str, anchor: str = "", nofollow: bool = False) -> tuple[str, int, int, str, bool]:
    return (url, fingerprint(url), fingerprint(host_key(url)), anchor, nofollow)


def test_crawl_log_round_trip_and_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "crawl.log.jsonl"
    log = CrawlLog.open(path, flush_every_entries=2)
    log.append({"url": "http://a/", "status": 200, "error": None, "text": "é"})
    assert path.read_bytes() == b""
    log.append({"url": "http://b/", "status": None, "error": "dns"})
    assert path.read_bytes().count(b"\n") == 2 and b'"status":200,' in path.read_bytes()
    log.append({"url": "http://c/"})
    log.close()
    with path.open("ab") as handle:
        handle.write(b'{"url":"http://d/","sta')
    assert [e["url"] for e in read_crawl_log(path)] == ["http://a/", "http://b/", "http://c/"]
    again = CrawlLog.open(path)
    again.append({"url": "http://e/"})
    again.close()
    assert [e["url"] for e in read_crawl_log(path)] == ["http://a/", "http://b/", "http://c/", "http://e/"]
    assert list(read_crawl_log(path))[0]["text"] == "é"


def test_crawl_log_errors(tmp_path: Path) -> None:
    log = CrawlLog.open(tmp_path / "log.jsonl")
    with pytest.raises(StoreError, match="not JSON data"):
        log.append({"url": "x", "bad": object()})
    with pytest.raises(StoreError, match="not JSON data"):
        log.append({"url": "x", "elapsed_s": float("nan")})
    log.close()
    with pytest.raises(StoreError, match="closed"):
        log.append({"url": "x"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"url":"a"}\nnot json\n{"url":"b"}\n')
    with pytest.raises(CorruptState, match=":2:"):
        list(read_crawl_log(bad))
    with pytest.raises(StoreError):
        list(read_crawl_log(tmp_path / "missing.jsonl"))


def test_link_log_round_trip(tmp_path: Path) -> None:
    log = LinkLog.open(tmp_path, flush_every_pages=2)
    src = "http://a.com/"
    links = [_link("http://a.com/x", "x"), _link("http://b.com/", "b", nofollow=True), _link("http://a.com/x", "again")]
    log.append_page(src, fingerprint(src), fingerprint("a.com"), links)
    log.append_page("http://a.com/x", fingerprint("http://a.com/x"), fingerprint("a.com"), [])
    log.append_page("http://b.com/", fingerprint("http://b.com/"), fingerprint("b.com"), [_link("http://a.com/")])
    log.close()
    edges = read_edges(tmp_path / "links.bin")
    assert edges.dtype == EDGE_DTYPE and len(edges) == 3
    assert edges[0].tolist() == (fingerprint(src), fingerprint("http://a.com/x"), fingerprint("a.com"), fingerprint("a.com"))
    assert edges[2]["dst"] == fingerprint("http://a.com/")
    pages = list(read_anchors(tmp_path / "anchors.jsonl.gz"))
    assert pages[0] == {"url": src, "links": [["http://a.com/x", "x", False], ["http://b.com/", "b", True], ["http://a.com/x", "again", False]]}
    assert [p["url"] for p in pages] == [src, "http://a.com/x", "http://b.com/"]
    with gzip.open(tmp_path / "anchors.jsonl.gz", "rt") as handle:  # plain gzip readers read it too
        assert len(handle.read().splitlines()) == 3


def test_link_log_crash_tails(tmp_path: Path) -> None:
    log = LinkLog.open(tmp_path, flush_every_pages=1)
    for i in range(3):
        log.append_page(f"http://a.com/{i}", i, 7, [_link(f"http://a.com/{i + 1}")])
    log.close()
    with (tmp_path / "links.bin").open("ab") as handle:
        handle.write(b"\x01" * 20)
    anchors = tmp_path / "anchors.jsonl.gz"
    whole = anchors.read_bytes()
    anchors.write_bytes(whole + whole[:30])
    assert len(read_edges(tmp_path / "links.bin")) == 3
    assert len(list(read_anchors(anchors))) == 3
    again = LinkLog.open(tmp_path)
    again.append_page("http://a.com/9", 9, 7, [_link("http://a.com/10")])
    again.close()
    assert (tmp_path / "links.bin").stat().st_size == 4 * 32
    assert [p["url"] for p in read_anchors(anchors)][-1] == "http://a.com/9"


def test_link_log_rejects_bad_fingerprints(tmp_path: Path) -> None:
    log = LinkLog.open(tmp_path)
    log.append_page("http://a/", -1, 0, [("http://b/", 1, 2, "", False)])
    with pytest.raises(StoreError, match="unsigned 64-bit"):
        log.flush()
    log.close()


def _write_crawl(out: Path, pages: dict[str, list[str]], log_extra: list[dict[str, object]]) -> None:
    log = CrawlLog.open(out / "crawl.log.jsonl")
    links = LinkLog.open(out)
    for url, targets in pages.items():
        log.append({"url": url, "host": host_key(url), "status": 200, "kind": "page"})
        links.append_page(url, fingerprint(url), fingerprint(host_key(url)), [_link(t) for t in targets])
    for entry in log_extra:
        log.append(entry)
    log.close()
    links.close()


def test_read_link_graph_over_nodes(tmp_path: Path) -> None:
    _write_crawl(tmp_path / "nodes" / "n1", {"http://a.com/": ["http://a.com/1", "http://b.com/"], "http://a.com/1": ["http://a.com/"]},
                 [{"url": "http://a.com/robots.txt", "kind": "robots", "status": 200},
                  {"url": "http://a.com/private", "kind": "page", "status": None, "error": "robots"}])
    _write_crawl(tmp_path / "nodes" / "n2", {"http://b.com/": ["http://c.com/x", "http://c.com/x"]},
                 [{"url": "http://b.com/gone", "kind": "page", "status": 404, "error": None},
                  {"url": "http://b.com/slow", "kind": "page", "status": None, "error": "timeout", "retry": True}])
    graph = read_link_graph(tmp_path)
    assert graph.n_links == 5 and graph.n_pages == 5 and graph.n_hosts == 3
    assert graph.urls is not None
    url_of = dict(enumerate(graph.urls))
    edges = sorted((url_of[s], url_of[d]) for s, d in zip(graph.src.tolist(), graph.dst.tolist()))
    assert edges == sorted([("http://a.com/", "http://a.com/1"), ("http://a.com/", "http://b.com/"),
                            ("http://a.com/1", "http://a.com/"), ("http://b.com/", "http://c.com/x"), ("http://b.com/", "http://c.com/x")])
    fetched = {url_of[i] for i in np.flatnonzero(graph.fetched)}
    assert fetched == {"http://a.com/", "http://a.com/1", "http://b.com/", "http://b.com/gone"}
    hosts = {url_of[i]: graph.host_names[h] for i, h in enumerate(graph.page_host.tolist())}
    assert hosts["http://c.com/x"] == "c.com" and hosts["http://a.com/1"] == "a.com"
    assert graph.src.dtype == np.int64 and graph.page_host.dtype == np.int64
    bare = read_link_graph(tmp_path, anchor_urls=False)
    assert bare.urls is not None and "http://c.com/x" not in bare.urls and bare.n_pages == 5
    with pytest.raises(AnalysisError):
        read_link_graph(tmp_path / "empty")


def test_summary_is_atomic_and_validated(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no summary"):
        read_summary(tmp_path)
    write_summary(tmp_path, {"pages": 3, "hosts": {"a.com": 3}})
    write_summary(tmp_path, {"pages": 4})
    assert read_summary(tmp_path) == {"pages": 4}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    with pytest.raises(StoreError, match="not JSON data"):
        write_summary(tmp_path, {"bad": float("inf")})
    assert read_summary(tmp_path) == {"pages": 4}
    (tmp_path / "summary.json").write_text("[1")
    with pytest.raises(CorruptState):
        read_summary(tmp_path)


def test_unique_inverse_matches_numpy() -> None:
    from webgather.store.graphread import unique_inverse

    rng = np.random.default_rng(3)
    for values in (rng.integers(0, 50, size=1000, dtype=np.uint64), np.array([2**64 - 1, 0, 2**64 - 1], dtype=np.uint64),
                   np.empty(0, dtype=np.uint64), np.array([5], dtype=np.uint64)):
        uniq, inverse = unique_inverse(values)
        expected_uniq, expected_inverse = np.unique(values, return_inverse=True)
        assert np.array_equal(uniq, expected_uniq) and np.array_equal(inverse, expected_inverse.ravel())
        assert np.array_equal(uniq[inverse], values)


def test_load_crawl_log_equals_the_line_reader(tmp_path: Path) -> None:
    from webgather.store.crawllog import load_crawl_log

    path = tmp_path / "crawl.log.jsonl"
    log = CrawlLog.open(path)
    for i in range(50):
        log.append({"url": f"http://a/{i}", "status": 200, "text": "line\nbreak é"})
    log.close()
    with path.open("ab") as handle:
        handle.write(b'{"url": "partial')
    assert load_crawl_log(path) == list(read_crawl_log(path)) and len(load_crawl_log(path)) == 50
    path.write_text('{"url":"a"}\n[1]\n')
    with pytest.raises(CorruptState, match=":2:"):
        load_crawl_log(path)
    path.write_text("")
    assert load_crawl_log(path) == []
    with pytest.raises(StoreError):
        load_crawl_log(tmp_path / "missing")
