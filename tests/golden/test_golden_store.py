"""Golden WARC bytes with pinned ids and dates, plain and gzip (one member per record)."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from webgather.store.gzmember import DEFLATE_BACKEND, iter_members

from golden_store import DATA, GOLDEN_BACKEND, build


def test_uncompressed_bytes_match(tmp_path: Path) -> None:
    path = build(tmp_path, gzipped=False)
    assert path.read_bytes() == (DATA / path.name).read_bytes()
    assert (tmp_path / "warc" / "index.cdxj").read_bytes() == (DATA / "index.cdxj").read_bytes()


def test_gzip_members_match(tmp_path: Path) -> None:
    path = build(tmp_path, gzipped=True)
    golden = (DATA / path.name).read_bytes()
    plain = (DATA / "webgather-golden-00000.warc").read_bytes()
    members = list(iter_members(path.read_bytes(), strict=True))
    assert len(members) == 6  # warcinfo + 2 x (response + request) + revisit (no request by default)
    # the same records as the plain golden; only the warcinfo names another file
    assert b"".join(members[1:]) == plain[plain.index(b"WARC/1.1\r\nWARC-Type: response") :]
    assert b"WARC-Filename: webgather-golden-00000.warc.gz\r\n" in members[0]
    assert list(iter_members(golden, strict=True)) == members
    if DEFLATE_BACKEND == GOLDEN_BACKEND:  # another deflate may compress the same text differently
        assert path.read_bytes() == golden
        assert (tmp_path / "warc" / "index.cdxj").read_bytes() == (DATA / "index.gz.cdxj").read_bytes()


def test_golden_record_text_is_what_the_spec_asks_for() -> None:
    """A hand-written expectation of the first response, independent of the builder."""
    plain = (DATA / "webgather-golden-00000.warc").read_bytes()
    body = b'<html><a href="/next">next</a></html>\nhello\n'
    http = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 44\r\n"
            b'ETag: "v1"\r\n\r\n' + body)
    assert b"\r\nContent-Length: %d\r\n\r\n" % len(http) + http + b"\r\n\r\n" in plain
    assert b"WARC-Type: response\r\nWARC-Record-ID: <urn:uuid:12345678-feb0-4000-8000-000000000002>\r\n" in plain
    assert b"WARC-Date: 2000-01-01T00:00:00Z\r\nWARC-Target-URI: http://example.com/\r\n" in plain
    with (DATA / "webgather-golden-00000.warc.gz").open("rb") as handle:
        kinds = [(r.rec_type, r.rec_headers.get_header("WARC-Record-ID")[-3:-1]) for r in ArchiveIterator(handle)]
    assert kinds == [("warcinfo", "01"), ("response", "02"), ("request", "03"), ("response", "04"),
                     ("request", "05"), ("revisit", "06")]
