"""A rendered page's DOM is archived as a WARC conversion record beside its response (warcio reads it)."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from webgather.config import StoreConfig
from webgather.store.cdxj import read_index
from webgather.store.warc import Archive
from webgather.store.writer import ArchiveWriter

from store_helpers import page, sha1_b32


def test_conversion_record_refers_to_the_response_and_warcio_checks_it(tmp_path: Path) -> None:
    dom = '<!DOCTYPE html><html><body><a href="http://example.com/y">y é</a></body></html>'.encode()
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    ref = archive.write_fetch(page("http://example.com/x", b"<html><script>1</script></html>"), dom)
    plain = archive.write_fetch(page("http://example.com/z", b"<html></html>"))
    archive.close()
    assert ref is not None and plain is not None
    records = []
    for path in sorted((tmp_path / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                records.append((record.rec_type, record.rec_headers, record.content_stream().read()))
    assert [kind for kind, _, _ in records] == ["warcinfo", "response", "request", "conversion", "response", "request"]
    _, headers, block = records[3]
    assert block == dom
    assert headers.get_header("WARC-Refers-To") == ref.record_id == records[1][1].get_header("WARC-Record-ID")
    assert headers.get_header("WARC-Target-URI") == "http://example.com/x"
    assert headers.get_header("Content-Type") == "text/html; charset=utf-8"
    assert headers.get_header("WARC-Payload-Digest") == sha1_b32(dom)
    assert headers.get_header("WARC-Warcinfo-ID") == records[0][1].get_header("WARC-Record-ID")
    # one index line per response: the conversion has none, and the next unit starts past it
    lines = list(read_index(tmp_path / "warc" / "index.cdxj"))
    assert len(lines) == 2
    assert plain.offset > ref.offset + ref.length


async def test_the_writer_passes_the_rendered_dom_to_the_archive(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())
    result = page("http://example.com/x", b"<html></html>")
    await writer.write(result, {"url": result.url, "status": 200}, None, rendered=b"<html>dom</html>")
    writer.submit_fetch(result, {"url": result.url, "status": 200}, rendered=b"<html>dom 2</html>")
    writer.close()
    kinds, doms = [], []
    for path in sorted((tmp_path / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                kinds.append(record.rec_type)
                if record.rec_type == "conversion":
                    doms.append(record.content_stream().read())
    assert kinds.count("conversion") == 2 and doms == [b"<html>dom</html>", b"<html>dom 2</html>"]
