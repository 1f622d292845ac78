"""Archive: records read back with warcio, digests, revisits, rotation, index lines."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from webgather.config import StoreConfig
from webgather.errors import StoreError
from webgather.store.cdxj import read_index
from webgather.store.warc import Archive, ArchiveRef

from store_helpers import T0, counter_ids, page, read_records, sha1_b32


def _only_file(out: Path) -> Path:
    files = sorted((out / "warc").glob("*.warc*"))
    assert len(files) == 1
    return files[0]


def test_response_and_request_read_back_with_digests(tmp_path: Path) -> None:
    body = b"<html>" + bytes(range(256)) * 50 + b"</html>"
    result = page("http://example.com/x?q=1", body)
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    ref = archive.write_fetch(result)
    archive.close()
    assert ref is not None
    path = _only_file(tmp_path)
    assert path.name == "webgather-n1-00000.warc.gz"
    records = list(read_records(path))
    assert [r["type"] for r in records] == ["warcinfo", "response", "request"]
    info, response, request = records
    assert response["offset"] == ref.offset
    head, _, payload = response["block"].partition(b"\r\n\r\n")
    assert payload == body
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    headers = response["headers"]
    assert headers["WARC-Target-URI"] == result.url
    assert headers["WARC-Date"] == "2023-11-14T22:13:20Z"
    assert headers["WARC-IP-Address"] == "127.0.0.1"
    assert headers["WARC-Block-Digest"] == sha1_b32(response["block"])
    assert headers["WARC-Payload-Digest"] == sha1_b32(body) == ref.payload_digest
    assert headers["WARC-Record-ID"] == ref.record_id
    assert headers["WARC-Concurrent-To"] == request["headers"]["WARC-Record-ID"]
    assert request["headers"]["WARC-Concurrent-To"] == ref.record_id
    assert request["block"].startswith(b"GET /x?q=1 HTTP/1.1\r\nHost: example.com\r\n")
    assert request["headers"]["WARC-Block-Digest"] == sha1_b32(request["block"])
    assert headers["WARC-Warcinfo-ID"] == info["headers"]["WARC-Record-ID"]
    assert b"software: webgather/" in info["block"]
    assert "WARC-Truncated" not in headers


def test_warcio_checks_every_digest_and_parses_http(tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    bodies = [b"", b"x", b"<p>hello</p>" * 1000]
    for i, body in enumerate(bodies):
        archive.write_fetch(page(f"http://example.com/{i}", body))
    archive.close()
    seen = []
    with _only_file(tmp_path).open("rb") as handle:
        for record in ArchiveIterator(handle, check_digests=True):
            content = record.content_stream().read()
            if record.rec_type == "response":
                assert record.http_headers.get_statuscode() == "200"
                seen.append(content)
            if record.rec_type != "warcinfo":
                assert record.digest_checker.passed is True, record.digest_checker.problems
    assert seen == bodies


def test_no_response_writes_nothing(tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    assert archive.write_fetch(page(status=None, error="dns")) is None
    archive.close()
    assert list((tmp_path / "warc").glob("*.warc*")) == []
    assert list(read_index(tmp_path / "warc" / "index.cdxj")) == []


def test_truncated_body_is_marked(tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    archive.write_fetch(page(body=b"a" * 100, truncated=True, error="too_large"))
    archive.close()
    response = [r for r in read_records(_only_file(tmp_path)) if r["type"] == "response"][0]
    assert response["headers"]["WARC-Truncated"] == "length"
    assert response["block"].endswith(b"a" * 100)


def test_a_body_cut_by_the_connection_is_marked_disconnect(tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    archive.write_fetch(page(body=b"a" * 100, error="truncated"))
    archive.close()
    response = [r for r in read_records(_only_file(tmp_path)) if r["type"] == "response"][0]
    assert response["headers"]["WARC-Truncated"] == "disconnect"


def test_chunked_transfer_encoding_is_not_claimed_and_crlf_cannot_forge_headers(tmp_path: Path) -> None:
    headers = (("Transfer-Encoding", "chunked"), ("X-Evil", "a\r\nWARC-Type: bogus"), ("Content-Type", "text/html"))
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    archive.write_fetch(page(body=b"plain", response_headers=headers, url="http://example.com/\r\nx"))
    archive.close()
    with _only_file(tmp_path).open("rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type == "response":
                assert record.http_headers.get_header("Transfer-Encoding") is None
                assert record.http_headers.get_header("X-Archive-Orig-Transfer-Encoding") == "chunked"
                assert record.http_headers.get_header("X-Evil") == "a  WARC-Type: bogus"
                assert record.content_stream().read() == b"plain"


def test_date_comes_from_started_at_or_the_injected_clock(tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig(), now_iso=lambda: "2001-02-03T04:05:06Z")
    ref = archive.write_fetch(page())
    archive.close()
    assert ref is not None and ref.date == "2001-02-03T04:05:06Z"
    bad = Archive.open(tmp_path / "b", "n1", StoreConfig())
    with pytest.raises(StoreError, match="not a time"):
        bad.write_fetch(page(started_at=float("nan")))
    bad.close()


@pytest.mark.parametrize("profile", ["server-not-modified", "identical-payload-digest"])
def test_revisit_refers_to_the_original(tmp_path: Path, profile: str) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig(), ids=counter_ids())
    original = archive.write_fetch(page(body=b"same"))
    assert original is not None
    if profile == "server-not-modified":
        again = page(body=b"", status=304, started_at=T0 + 86400, response_headers=(("ETag", '"v1"'),))
    else:
        again = page(body=b"same", started_at=T0 + 86400)
    ref = archive.write_revisit(again, original, profile)  # type: ignore[arg-type]
    archive.close()
    revisit = [r for r in read_records(_only_file(tmp_path)) if r["type"] == "revisit"][0]
    headers = revisit["headers"]
    assert headers["WARC-Refers-To"] == original.record_id
    assert headers["WARC-Refers-To-Target-URI"] == original.url
    assert headers["WARC-Refers-To-Date"] == original.date
    assert headers["WARC-Profile"] == f"http://netpreserve.org/warc/1.1/revisit/{profile}"
    assert headers["WARC-Payload-Digest"] == original.payload_digest == ref.payload_digest
    assert headers["WARC-Block-Digest"] == sha1_b32(revisit["block"])
    assert revisit["block"].endswith(b"\r\n\r\n") and b"same" not in revisit["block"]
    assert ref.offset == revisit["offset"] and ref.date == "2023-11-15T22:13:20Z"
    lines = list(read_index(tmp_path / "warc" / "index.cdxj"))
    assert [e.mime for e in lines] == ["text/html", "warc/revisit"]


def test_revisit_rejects_a_different_payload_and_no_response(tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    original = archive.write_fetch(page(body=b"old"))
    assert original is not None
    with pytest.raises(StoreError, match="differs"):
        archive.write_revisit(page(body=b"new"), original, "identical-payload-digest")
    with pytest.raises(StoreError, match="without a response"):
        archive.write_revisit(page(status=None), original, "server-not-modified")
    archive.close()


def test_rotation_index_and_offsets(tmp_path: Path) -> None:
    config = StoreConfig(warc_max_bytes=8 * 1024)
    archive = Archive.open(tmp_path, "n1", config)
    refs = [archive.write_fetch(page(f"http://example.com/{i}", bytes([65 + i % 26]) * 3000 + bytes(range(256)) * 8)) for i in range(40)]
    archive.close()
    files = sorted((tmp_path / "warc").glob("*.warc.gz"))
    assert len(files) > 3
    for path in files:
        records = list(read_records(path))
        assert records[0]["type"] == "warcinfo"
        assert path.stat().st_size < config.warc_max_bytes + 8 * 1024
    entries = list(read_index(tmp_path / "warc" / "index.cdxj"))
    assert [e.url for e in entries] == [f"http://example.com/{i}" for i in range(40)]
    for entry, ref in zip(entries, refs):
        assert ref is not None and (entry.filename, entry.offset, entry.length) == (ref.filename, ref.offset, ref.length)
        with (tmp_path / "warc" / entry.filename).open("rb") as handle:
            handle.seek(entry.offset)
            member = handle.read(entry.length)
        inflater = zlib.decompressobj(wbits=31)
        text = inflater.decompress(member)
        assert inflater.eof and not inflater.unused_data
        assert b"WARC-Type: response\r\n" in text and entry.url.encode() in text
        assert entry.digest == ref.payload_digest.removeprefix("sha1:")


def test_reopen_continues_in_a_new_file_without_touching_old_ones(tmp_path: Path) -> None:
    first = Archive.open(tmp_path, "n1", StoreConfig())
    first.write_fetch(page("http://example.com/1"))
    first.close()
    old = _only_file(tmp_path).read_bytes()
    second = Archive.open(tmp_path, "n1", StoreConfig())
    ref = second.write_fetch(page("http://example.com/2"))
    second.close()
    assert ref is not None and ref.filename == "webgather-n1-00001.warc.gz"
    assert (tmp_path / "warc" / "webgather-n1-00000.warc.gz").read_bytes() == old
    assert len(list(read_index(tmp_path / "warc" / "index.cdxj"))) == 2


def test_uncompressed_files(tmp_path: Path) -> None:
    archive = Archive.open(tmp_path, "n1", StoreConfig(warc_gzip=False))
    ref = archive.write_fetch(page())
    archive.close()
    assert ref is not None and ref.filename.endswith(".warc")
    data = (tmp_path / "warc" / ref.filename).read_bytes()
    assert data[ref.offset : ref.offset + ref.length].startswith(b"WARC/1.1\r\nWARC-Type: response\r\n")
    assert data[ref.offset : ref.offset + ref.length].endswith(b"</html>\r\n\r\n")
    assert [r["type"] for r in read_records(tmp_path / "warc" / ref.filename)] == ["warcinfo", "response", "request"]


def test_bad_arguments_are_store_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        Archive.open(tmp_path, "../evil", StoreConfig())
    with pytest.raises(StoreError):
        Archive.open(tmp_path, "n1", StoreConfig(warc_max_bytes=0))
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError):
        Archive.open(tmp_path / "file", "n1", StoreConfig())
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    archive.close()
    with pytest.raises(StoreError, match="closed"):
        archive.write_fetch(page())


def test_archive_ref_is_a_value() -> None:
    ref = ArchiveRef("f", 1, 2, "<id>", "sha1:X", "2000-01-01T00:00:00Z", "http://a/")
    assert ref == ArchiveRef("f", 1, 2, "<id>", "sha1:X", "2000-01-01T00:00:00Z", "http://a/")
