"""A crawl directory's link log as a :class:`webgather.linkgraph.LinkGraph`. Vectorized.

Reads every ``links.bin`` under the directory (a cluster writes
``DIR/nodes/<node>/links.bin``), the crawl logs (which pages were fetched,
their URLs and hosts) and optionally the anchors (URLs of link targets).
Pages are the unique fingerprints of link ends and fetched URLs; hosts the
unique host fingerprints. The work on links is numpy (sort, unique,
searchsorted); Python loops run over log lines and unique URLs only.
Reached as :func:`webgather.store.linklog.read_link_graph`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph
from webgather.store.crawllog import CRAWL_LOG_NAME, read_crawl_log
from webgather.store.linklog import ANCHORS_NAME, EDGE_DTYPE, LINKS_NAME, read_anchors, read_edges
from webgather.urls import fingerprints, host_key

__all__ = ["NOT_FETCHED_ERRORS", "build_link_graph", "fetched_urls"]

NOT_FETCHED_ERRORS = frozenset({"robots", "robots_unavailable", "off_scope"})
"""Crawl-log errors that mean the URL was not fetched (docs/contracts.md, point 7)."""


def fetched_urls(crawl_log: Path) -> list[str]:
    """URLs of the fetched set of one crawl log (final page/sitemap attempts, not refused)."""
    return [
        entry["url"]
        for entry in read_crawl_log(crawl_log)
        if isinstance(entry.get("url"), str)
        and entry.get("kind", "page") in ("page", "sitemap")
        and not entry.get("retry")
        and entry.get("error") not in NOT_FETCHED_ERRORS
    ]


def _edges(paths: list[Path]) -> np.ndarray:
    parts = [read_edges(p) for p in paths]
    if not parts:
        return np.empty(0, dtype=EDGE_DTYPE)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _anchor_urls(paths: Iterable[Path]) -> set[str]:
    known: set[str] = set()
    for path in paths:
        for page in read_anchors(path):
            if isinstance(page.get("url"), str):
                known.add(page["url"])
            known.update(link[0] for link in page.get("links", ()) if link and isinstance(link[0], str))
    return known


def _host_names(host_fps: np.ndarray, urls: Iterable[str]) -> tuple[str, ...]:
    names = np.full(host_fps.shape[0], "", dtype=object)
    keys = {host_key(u) for u in urls if "//" in u}
    if keys and host_fps.size:
        ordered = sorted(keys)
        fps = fingerprints(ordered)
        at = np.minimum(np.searchsorted(host_fps, fps), host_fps.size - 1)
        hit = host_fps[at] == fps
        names[at[hit]] = np.array(ordered, dtype=object)[hit]
    return tuple(names.tolist())


def _page_urls(pages: np.ndarray, urls: set[str]) -> tuple[str, ...]:
    out = np.full(pages.shape[0], "", dtype=object)
    if urls and pages.size:
        ordered = np.array(sorted(urls), dtype=object)
        fps = fingerprints(ordered.tolist())
        at = np.minimum(np.searchsorted(pages, fps), pages.size - 1)
        hit = pages[at] == fps
        out[at[hit]] = ordered[hit]
    return tuple(out.tolist())


def build_link_graph(crawl_dir: Path, *, anchor_urls: bool = True) -> LinkGraph:
    """The link graph of every node's link log and crawl log under ``crawl_dir``.

    ``anchor_urls=False`` skips ``anchors.jsonl.gz`` (faster on big crawls):
    only fetched pages then get a URL and a host name.
    """
    crawl_dir = Path(crawl_dir)
    links = sorted(crawl_dir.rglob(LINKS_NAME))
    logs = sorted(crawl_dir.rglob(CRAWL_LOG_NAME))
    if not links and not logs:
        raise AnalysisError(f"{crawl_dir} holds no {LINKS_NAME} and no {CRAWL_LOG_NAME}")
    edges = _edges(links)
    fetched = [url for log in logs for url in fetched_urls(log)]
    fetched_fps = fingerprints(fetched)
    fetched_host_fps = fingerprints(host_key(u) for u in fetched)
    page_fps = np.concatenate((edges["src"], edges["dst"], fetched_fps))
    host_of = np.concatenate((edges["src_host"], edges["dst_host"], fetched_host_fps))
    pages, inverse = np.unique(page_fps, return_inverse=True)
    page_host_fp = np.empty(pages.shape[0], dtype=np.uint64)
    page_host_fp[inverse] = host_of
    host_fps, page_host = np.unique(page_host_fp, return_inverse=True)
    n_links = edges.shape[0]
    is_fetched = np.zeros(pages.shape[0], dtype=bool)
    is_fetched[inverse[2 * n_links :]] = True
    known = set(fetched)
    if anchor_urls:
        known |= _anchor_urls(sorted(crawl_dir.rglob(ANCHORS_NAME)))
    return LinkGraph(
        src=inverse[:n_links].astype(np.int64, copy=False),
        dst=inverse[n_links : 2 * n_links].astype(np.int64, copy=False),
        page_host=page_host.astype(np.int64, copy=False),
        host_names=_host_names(host_fps, known),
        fetched=is_fetched,
        urls=_page_urls(pages, known),
    )


