"""Totals of a crawl: what was fetched (crawl log) and what links it holds (link graph). Pure.

Crawl-log figures use :class:`~webgather.analysis.fetchlog.FetchTable`'s
definitions (fetches, and pages = 2xx pages); page sizes are the crawl log's
``bytes`` of pages. Link figures count link occurrences as the link log holds
them (a page linking twice counts twice, as the documents' 58.6 M links do);
``distinct_links`` and ``avg_distinct_out_degree`` count each (page, target)
once. The average out-degree divides by the fetched pages (the pages whose
out-links are known). A link goes *outside the crawl* when its destination
was never fetched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from webgather.analysis.fetchlog import FetchTable
from webgather.analysis.graphops import SimpleGraph, count_values
from webgather.linkgraph import LinkGraph

__all__ = ["CrawlTotals", "LinkTotals", "crawl_totals", "link_totals"]


@dataclass(frozen=True)
class CrawlTotals:
    entries: int
    retries: int
    bad_entries: int
    fetches: int
    pages: int
    """Fetched pages with a 2xx status."""
    hosts: int
    """Hosts with at least one page."""
    pages_per_host: float
    avg_page_bytes: float
    median_page_bytes: float
    total_page_bytes: int
    robots_excluded: int
    status_mix: dict[str, int]
    """Over fetches: ``"200"``, ``"404"``, ``"timeout"``, ``"200:too_large"``..."""


@dataclass(frozen=True)
class LinkTotals:
    pages: int
    """Pages in the link graph (fetched or only linked to)."""
    fetched_pages: int
    hosts: int
    links: int
    distinct_links: int
    self_links: int
    avg_out_degree: float
    avg_distinct_out_degree: float
    cross_host_share: float
    outside_share: float
    pages_per_host: float
    """Fetched pages per host that has one."""


def _status_key(status: int, error: str) -> str:
    if not error:
        return str(status)
    return error if status < 0 else f"{status}:{error}"


def crawl_totals(table: FetchTable) -> CrawlTotals:
    """Totals of the crawl log."""
    fetches = table.fetches()
    pages = table.pages()
    sizes = table.size_bytes[pages]
    hosts = int(np.count_nonzero(np.bincount(table.host[pages]))) if pages.any() else 0
    n_errors = len(table.error_names)
    keys = (table.status[fetches].astype(np.int64) + 1) * n_errors + table.error[fetches]
    values, counts = count_values(keys)
    mix: dict[str, int] = {}
    for key, count in zip(values.tolist(), counts.tolist()):
        name = _status_key(key // n_errors - 1, table.error_names[key % n_errors])
        mix[name] = mix.get(name, 0) + int(count)
    excluded = [i for i, n in enumerate(table.error_names) if n in ("robots", "robots_unavailable")]
    return CrawlTotals(
        entries=table.n_entries,
        retries=table.retries,
        bad_entries=table.bad_entries,
        fetches=int(np.count_nonzero(fetches)),
        pages=int(np.count_nonzero(pages)),
        hosts=hosts,
        pages_per_host=float(sizes.size / hosts) if hosts else 0.0,
        avg_page_bytes=float(sizes.mean()) if sizes.size else 0.0,
        median_page_bytes=float(np.median(sizes)) if sizes.size else 0.0,
        total_page_bytes=int(sizes.sum()),
        robots_excluded=int(np.count_nonzero(np.isin(table.error, excluded))),
        status_mix=dict(sorted(mix.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def link_totals(graph: LinkGraph, simple: SimpleGraph) -> LinkTotals:
    """Totals of the link graph."""
    links = graph.n_links
    fetched = int(np.count_nonzero(graph.fetched))
    hosts = graph.page_host
    cross = int(np.count_nonzero(hosts[graph.src] != hosts[graph.dst])) if links else 0
    outside = int(np.count_nonzero(~graph.fetched[graph.dst])) if links else 0
    fetched_hosts = int(np.count_nonzero(np.bincount(hosts[graph.fetched], minlength=1)))
    return LinkTotals(
        pages=graph.n_pages,
        fetched_pages=fetched,
        hosts=graph.n_hosts,
        links=links,
        distinct_links=simple.n_edges,
        self_links=int(np.count_nonzero(graph.src == graph.dst)),
        avg_out_degree=links / fetched if fetched else 0.0,
        avg_distinct_out_degree=simple.n_edges / fetched if fetched else 0.0,
        cross_host_share=cross / links if links else 0.0,
        outside_share=outside / links if links else 0.0,
        pages_per_host=fetched / fetched_hosts if fetched_hosts else 0.0,
    )
