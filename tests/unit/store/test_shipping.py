"""Rotation of the WARC writer and shipping of closed WARC files with their CDXJ to a shared store."""

from __future__ import annotations

from pathlib import Path

from webgather.config import StoreConfig
from webgather.store.shared import FileStore
from webgather.store.shipping import WarcShipper, cdxj_key, warc_key
from webgather.store.writer import ArchiveWriter

from store_helpers import page, read_records


async def _fetch(writer: ArchiveWriter, url: str) -> None:
    writer.submit_fetch(page(url), {"url": url}, None)
    await writer.drain()


def _urls_in(data: bytes, tmp: Path) -> list[str]:
    path = tmp / "copy.warc.gz"
    path.write_bytes(data)
    return [r["headers"]["WARC-Target-URI"] for r in read_records(path) if r["type"] == "response"]


async def test_rotate_closes_the_file_and_the_next_record_opens_a_new_one(tmp_path: Path) -> None:
    writer = ArchiveWriter.open(tmp_path, "n1", StoreConfig())
    await _fetch(writer, "http://example.com/a")
    closed, index_bytes = await writer.rotate()
    assert closed == ["webgather-n1-00000.warc.gz"]
    assert index_bytes == (tmp_path / "warc" / "index.cdxj").stat().st_size > 0
    await _fetch(writer, "http://example.com/b")
    closed, _ = await writer.rotate()
    assert closed == ["webgather-n1-00000.warc.gz", "webgather-n1-00001.warc.gz"]
    writer.close()


async def test_ship_puts_each_closed_file_once_with_its_own_cdxj_lines(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "shared")
    writer = ArchiveWriter.open(tmp_path / "out", "n1", StoreConfig())
    shipper = WarcShipper(store, tmp_path / "out" / "warc", "n1")
    await _fetch(writer, "http://example.com/a")
    await _fetch(writer, "http://example.com/b")
    assert shipper.ship(*await writer.rotate()) == 1
    await _fetch(writer, "http://example.com/c")  # written into the next file, not closed yet
    assert shipper.ship(*await writer.rotate()) == 1
    assert shipper.ship(*await writer.rotate()) == 0  # nothing new
    first, second = "webgather-n1-00000.warc.gz", "webgather-n1-00001.warc.gz"
    assert store.list() == [cdxj_key(first), cdxj_key(second), warc_key(first), warc_key(second)]
    assert _urls_in(store.get_bytes(warc_key(first)) or b"", tmp_path) == ["http://example.com/a", "http://example.com/b"]
    assert _urls_in(store.get_bytes(warc_key(second)) or b"", tmp_path) == ["http://example.com/c"]
    lines = (store.get_bytes(cdxj_key(first)) or b"").decode().splitlines()
    assert len(lines) == 2 and all(f'"filename":"{first}"' in line for line in lines)
    assert '"url":"http://example.com/c"' in (store.get_bytes(cdxj_key(second)) or b"").decode()
    writer.close()


async def test_a_new_shipper_skips_what_the_store_has_and_ship_all_takes_the_rest(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "shared")
    writer = ArchiveWriter.open(tmp_path / "out", "n1", StoreConfig())
    await _fetch(writer, "http://example.com/a")
    WarcShipper(store, tmp_path / "out" / "warc", "n1").ship(*await writer.rotate())
    await _fetch(writer, "http://example.com/b")
    writer.close()
    again = WarcShipper(store, tmp_path / "out" / "warc", "n1")  # a restarted node
    assert again.ship_all() == 1
    assert store.list("warc/") == [warc_key("webgather-n1-00000.warc.gz"), warc_key("webgather-n1-00001.warc.gz")]
    assert '"url":"http://example.com/b"' in (store.get_bytes(cdxj_key("webgather-n1-00001.warc.gz")) or b"").decode()
