"""Crash safety: after a cut at any byte, or a real SIGKILL, records are whole or absent."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from webgather.config import StoreConfig
from webgather.errors import CorruptState
from webgather.store.cdxj import read_index
from webgather.store.crawllog import read_crawl_log
from webgather.store.linklog import EDGE_DTYPE, read_anchors, read_edges
from webgather.store.warc import Archive
from webgather.store.writer import ArchiveWriter

from store_helpers import page

SRC = Path(__file__).resolve().parents[3] / "src"


def _check_consistent(out: Path, checked: dict[str, tuple[bytes, dict[tuple[str, int], str]]] | None = None) -> int:
    """Every WARC reads back whole with valid digests; index lines == response records.

    ``checked`` caches files read before (name -> (bytes, responses)): they
    must not have changed since (nothing rewrites earlier files).
    """
    warc_dir = out / "warc"
    responses = {}
    checked = {} if checked is None else checked
    for path in sorted(warc_dir.glob("*.warc*")):
        if path.name in checked:
            assert path.read_bytes() == checked[path.name][0], f"{path.name} was rewritten"
            responses.update(checked[path.name][1])
            continue
        found: dict[tuple[str, int], str] = {}
        with path.open("rb") as handle:
            iterator = ArchiveIterator(handle, check_digests=True)
            types = []
            for record in iterator:
                record.content_stream().read()
                types.append(record.rec_type)
                if record.rec_type != "warcinfo":
                    assert record.digest_checker.passed is True, (path, record.digest_checker.problems)
                if record.rec_type in ("response", "revisit"):
                    found[(path.name, iterator.get_record_offset())] = record.rec_headers.get_header("WARC-Target-URI")
        assert types[0] == "warcinfo"
        assert types.count("request") == types.count("response") + types.count("revisit")
        checked[path.name] = (path.read_bytes(), found)
        responses.update(found)
    entries = list(read_index(warc_dir / "index.cdxj"))
    assert {(e.filename, e.offset): e.url for e in entries} == responses
    return len(entries)


def _write_some(out: Path, count: int, config: StoreConfig) -> None:
    archive = Archive.open(out, "n1", config)
    for i in range(count):
        archive.write_fetch(page(f"http://example.com/{i}", b"<p>%d</p>" % i * (50 + 37 * i)))
    archive.close()


@pytest.mark.parametrize("gzipped", [True, False])
def test_a_cut_anywhere_in_the_last_writes_is_repaired(tmp_path: Path, gzipped: bool) -> None:
    config = StoreConfig(warc_gzip=gzipped)
    good = tmp_path / "good"
    _write_some(good, 4, config)
    (warc,) = list((good / "warc").glob("*.warc*"))
    size = warc.stat().st_size
    entries = list(read_index(good / "warc" / "index.cdxj"))
    boundaries = [0] + [e.offset for e in entries] + [size]
    rng = random.Random(7)
    cuts = sorted({*boundaries, *(rng.randrange(0, size) for _ in range(40)), size - 1, size - 4})
    for cut in cuts:
        crashed = tmp_path / f"cut{cut}"
        shutil.copytree(good, crashed)
        with (crashed / "warc" / warc.name).open("r+b") as handle:
            handle.truncate(cut)
        Archive.open(crashed, "n1", config).close()
        expected_size = max(b for b in boundaries if b <= cut)
        repaired = crashed / "warc" / warc.name
        assert (repaired.stat().st_size if repaired.exists() else 0) == expected_size, cut
        assert _check_consistent(crashed) == sum(1 for e in entries if e.offset + e.length <= expected_size)


def test_partial_index_line_is_cut(tmp_path: Path) -> None:
    _write_some(tmp_path, 3, StoreConfig())
    index = tmp_path / "warc" / "index.cdxj"
    data = index.read_bytes()
    index.write_bytes(data[:-10])
    archive = Archive.open(tmp_path, "n1", StoreConfig())
    archive.write_fetch(page("http://example.com/new"))
    archive.close()
    assert [e.url.rsplit("/", 1)[1] for e in read_index(index)] == ["0", "1", "new"]


def test_garbage_in_the_middle_is_corrupt_state_not_a_silent_cut(tmp_path: Path) -> None:
    _write_some(tmp_path, 3, StoreConfig())
    (warc,) = list((tmp_path / "warc").glob("*.warc.gz"))
    data = bytearray(warc.read_bytes())
    first = next(read_index(tmp_path / "warc" / "index.cdxj"))
    data[first.offset : first.offset + 4] = b"JUNK"
    warc.write_bytes(bytes(data))
    with pytest.raises(CorruptState, match=warc.name):
        Archive.open(tmp_path, "n1", StoreConfig())


CHILD = r"""
import signal, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from webgather.config import StoreConfig
from webgather.fetch.model import FetchResult
from webgather.store.writer import ArchiveWriter
from webgather.urls import fingerprint, host_key
signal.alarm(30)
writer = ArchiveWriter.open(Path(sys.argv[1]), "n1", StoreConfig(warc_max_bytes=200_000), queue_max_items=64)
print("ready", flush=True)
i = 0
while True:
    url = f"http://h{i % 7}.example/{i}"
    body = (b"<p>page %d</p>" % i) * (1 + (i * 7919) % 900)
    result = FetchResult(url=url, started_at=1.7e9 + i, elapsed_s=0.01, status=200, reason="OK",
        request_headers=(("Host", host_key(url)),), response_headers=(("Content-Type", "text/html"),),
        raw_body=body, body=body, peer_ip="127.0.0.1")
    dst = f"http://h{(i + 1) % 7}.example/{i + 1}"
    links = [(dst, fingerprint(dst), fingerprint(host_key(dst)), "next", False)] * (i % 30)
    writer.submit_fetch(result, {"url": url, "status": 200, "i": i}, links)
    i += 1
"""


def test_sigkill_at_random_moments_leaves_everything_readable(tmp_path: Path) -> None:
    rng = random.Random(20240501)
    total = 0
    checked: dict[str, tuple[bytes, dict[tuple[str, int], str]]] = {}
    for _ in range(5):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path), str(SRC)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
            try:
                child.wait(timeout=rng.uniform(0.02, 0.4))
            except subprocess.TimeoutExpired:
                pass
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            if child.stdout:
                child.stdout.close()
            if child.stderr:
                child.stderr.close()
        ArchiveWriter.open(tmp_path, "n1", StoreConfig()).close()
        count = _check_consistent(tmp_path, checked)
        assert count >= total
        total = count
        entries = list(read_crawl_log(tmp_path / "crawl.log.jsonl"))
        assert all(json.dumps(e) for e in entries) and (tmp_path / "crawl.log.jsonl").read_bytes()[-1:] in (b"", b"\n")
        assert (tmp_path / "links.bin").stat().st_size % EDGE_DTYPE.itemsize == 0
        assert len(read_edges(tmp_path / "links.bin")) == sum(len(p["links"]) for p in read_anchors(tmp_path / "anchors.jsonl.gz"))
    assert total > 0
