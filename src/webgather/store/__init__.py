"""The archive of a crawl: WARC files, their CDXJ index, the crawl log, the link log, the summary.

Inputs: :class:`webgather.fetch.model.FetchResult` values (one per HTTP
request), crawl-log entries (plain dicts, see docs/contracts.md) and the
followable out-links of each parsed page. Outputs: the on-disk layout of
docs/contracts.md under the crawl directory (``warc/*.warc.gz`` with
``warc/index.cdxj``, ``crawl.log.jsonl``, ``links.bin``, ``anchors.jsonl.gz``,
``summary.json``) and the readers that analysis consumes
(:func:`read_crawl_log`, :func:`read_edges`, :func:`read_anchors`,
:func:`read_link_graph`, :func:`read_index`).

Called by ``runtime`` (the node's pipeline hands every fetch to one
:class:`ArchiveWriter` - ``await writer.write(result, log_entry, links)`` or
``submit_fetch`` - whose background thread owns the files) and by the
analysis commands (the readers). Record building (:mod:`.records`), SURT keys
and CDXJ lines (:mod:`.cdxj`) are pure; the rest is the thin file-IO shell.
Every write is crash-safe in the sense of docs/contracts.md: after a kill -9 a
record is whole or absent, and re-opening repairs the tail.
"""

from __future__ import annotations

from webgather.store.crawllog import CrawlLog, read_crawl_log
from webgather.store.cdxj import read_index, sort_index, surt
from webgather.store.graphread import read_link_graph
from webgather.store.linklog import LinkLog, read_anchors, read_edges
from webgather.store.summary import read_summary, write_summary
from webgather.store.warc import Archive, ArchiveRef
from webgather.store.writer import ArchiveWriter, WriterStats

__all__ = [
    "Archive",
    "ArchiveRef",
    "ArchiveWriter",
    "CrawlLog",
    "LinkLog",
    "WriterStats",
    "read_anchors",
    "read_crawl_log",
    "read_edges",
    "read_index",
    "read_link_graph",
    "read_summary",
    "sort_index",
    "surt",
    "write_summary",
]
