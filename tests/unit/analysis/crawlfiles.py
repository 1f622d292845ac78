"""Write a tiny crawl directory in the documented on-disk format (docs/contracts.md).

``crawl.log.jsonl`` (one JSON object per attempt), ``links.bin`` (packed
little-endian ``(src_fp, dst_fp, src_host_fp, dst_host_fp)`` uint64 records)
and ``anchors.jsonl.gz`` (one gzip member), per node under ``DIR/nodes/<node>``.
Written by hand here, not by the store's writers, so the test pins the format.
"""

from __future__ import annotations

import gzip
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from webgather.urls import fingerprint, host_key

__all__ = ["NodeFiles", "write_node"]


@dataclass
class NodeFiles:
    """One node's log lines and out-links, built up by the test."""

    name: str
    entries: list[dict[str, object]] = field(default_factory=list)
    links: list[tuple[str, list[str]]] = field(default_factory=list)

    def page(self, url: str, at: float, links: list[str], *, status: int = 200, size: int = 1000,
             error: str | None = None, kind: str = "page") -> None:
        self.entries.append({
            "url": url, "host": host_key(url), "status": status, "error": error, "bytes": size,
            "fetched_at": at, "kind": kind, "node": self.name, "retry": False, "links": len(links),
        })
        if links:
            self.links.append((url, links))


def write_node(directory: Path, node: NodeFiles, *, partial_tail: bool = False) -> Path:
    """Write ``node``'s files under ``directory/nodes/<name>``; return that path."""
    path = directory / "nodes" / node.name
    path.mkdir(parents=True, exist_ok=True)
    with (path / "crawl.log.jsonl").open("w") as log:
        for entry in node.entries:
            log.write(json.dumps(entry) + "\n")
        if partial_tail:
            log.write('{"url": "http://cut')
    records = b"".join(
        struct.pack("<4Q", fingerprint(src), fingerprint(dst), fingerprint(host_key(src)), fingerprint(host_key(dst)))
        for src, dsts in node.links
        for dst in dsts
    )
    (path / "links.bin").write_bytes(records + (b"\x01\x02\x03" if partial_tail else b""))
    lines = "".join(
        json.dumps({"url": src, "links": [[dst, "anchor", False] for dst in dsts]}) + "\n" for src, dsts in node.links
    )
    (path / "anchors.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    return path
