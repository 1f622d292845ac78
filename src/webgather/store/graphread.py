"""A crawl directory's link log as a :class:`webgather.linkgraph.LinkGraph`. Vectorized.

Reads every ``links.bin`` under the directory (a cluster writes
``DIR/nodes/<node>/links.bin``), the crawl logs (which pages were fetched,
their URLs and hosts) and optionally the anchors (URLs of link targets).
Pages are the unique fingerprints of link ends and fetched URLs; hosts the
unique host fingerprints. The work on links is numpy (sort, unique,
searchsorted); Python loops run over log lines and unique URLs only.
Reached as :func:`read_link_graph` (also exported by :mod:`webgather.store`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from pathlib import Path

import numpy as np

from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph
from webgather.store.crawllog import CRAWL_LOG_NAME, load_crawl_log
from webgather.store.linklog import ANCHORS_NAME, EDGE_DTYPE, LINKS_NAME, read_anchors, read_edges
from webgather.urls import fingerprint, fingerprints, host_key

__all__ = ["NOT_FETCHED_ERRORS", "build_link_graph", "fetched_pages", "read_link_graph", "unique_inverse"]

NOT_FETCHED_ERRORS = frozenset({"robots", "robots_unavailable", "off_scope"})
"""Crawl-log errors that mean the URL was not fetched (docs/contracts.md, point 7)."""


def _is_fetched(entry: dict[str, Any]) -> bool:
    return (
        isinstance(entry.get("url"), str)
        and entry.get("kind", "page") in ("page", "sitemap")
        and not entry.get("retry")
        and entry.get("error") not in NOT_FETCHED_ERRORS
    )


def fetched_pages(crawl_log: Path) -> list[tuple[str, str]]:
    """(url, host key) of the fetched set of one crawl log (docs/contracts.md, point 7)."""
    pages = []
    for entry in load_crawl_log(crawl_log):
        if _is_fetched(entry):
            host = entry.get("host")
            pages.append((entry["url"], host if isinstance(host, str) and host else host_key(entry["url"])))
    return pages


def _edges(paths: list[Path]) -> np.ndarray:
    parts = [read_edges(p) for p in paths]
    if not parts:
        return np.empty(0, dtype=EDGE_DTYPE)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _anchor_urls(paths: Iterable[Path], skip: set[str]) -> list[str]:
    """URLs named in the anchors that are not in ``skip``."""
    known: set[str] = set()
    for path in paths:
        for page in read_anchors(path):
            if isinstance(page.get("url"), str):
                known.add(page["url"])
            known.update(link[0] for link in page.get("links", ()) if link and isinstance(link[0], str))
    return sorted(known - skip)


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for integer arrays, 3-4x faster on
    many duplicates: numpy's stable argsort of integers is a radix sort, its
    default quicksort slows down on repeated keys."""
    if values.size == 0:
        return values.copy(), np.empty(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.empty(ordered.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(ordered.shape[0], dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _fingerprints_by_value(values: list[str]) -> np.ndarray:
    """Fingerprints of many strings with few distinct values (host keys): each hashed once."""
    distinct = {v: fingerprint(v) for v in set(values)}
    return np.fromiter((distinct[v] for v in values), dtype=np.uint64, count=len(values))


def _names_of(keys: np.ndarray, known_fps: np.ndarray, known_names: np.ndarray) -> tuple[str, ...]:
    """For each sorted unique fingerprint in ``keys`` the name in ``known_*`` with that fingerprint, or ""."""
    out = np.full(keys.shape[0], "", dtype=object)
    if keys.size and known_fps.size:
        at = np.minimum(np.searchsorted(keys, known_fps), keys.size - 1)
        hit = keys[at] == known_fps
        out[at[hit]] = known_names[hit]
    return tuple(out.tolist())


def build_link_graph(crawl_dir: Path, *, anchor_urls: bool = True) -> LinkGraph:
    """The link graph of every node's link log and crawl log under ``crawl_dir``.

    ``anchor_urls=False`` skips ``anchors.jsonl.gz`` (faster on big crawls):
    only fetched pages then get a URL and a host name.
    """
    crawl_dir = Path(crawl_dir)
    links, logs = sorted(crawl_dir.rglob(LINKS_NAME)), sorted(crawl_dir.rglob(CRAWL_LOG_NAME))
    if not links and not logs:
        raise AnalysisError(f"{crawl_dir} holds no {LINKS_NAME} and no {CRAWL_LOG_NAME}")
    edges = _edges(links)
    fetched = [page for log in logs for page in fetched_pages(log)]
    urls = [url for url, _ in fetched]
    hosts = [host for _, host in fetched]
    fetched_fps = fingerprints(urls)
    page_fps = np.concatenate((edges["src"], edges["dst"], fetched_fps))
    host_of = np.concatenate((edges["src_host"], edges["dst_host"], _fingerprints_by_value(hosts)))
    pages, inverse = unique_inverse(page_fps)
    del page_fps
    page_host_fp = np.empty(pages.shape[0], dtype=np.uint64)
    page_host_fp[inverse] = host_of
    del host_of
    host_fps, page_host = unique_inverse(page_host_fp)
    n_links = edges.shape[0]
    is_fetched = np.zeros(pages.shape[0], dtype=bool)
    is_fetched[inverse[2 * n_links :]] = True
    extra = _anchor_urls(sorted(crawl_dir.rglob(ANCHORS_NAME)), set(urls)) if anchor_urls else []
    known_urls = np.array(urls + extra, dtype=object)
    known_hosts = np.array(sorted(set(hosts) | {host_key(u) for u in extra if "//" in u}), dtype=object)
    return LinkGraph(
        src=inverse[:n_links].astype(np.int64, copy=False),
        dst=inverse[n_links : 2 * n_links].astype(np.int64, copy=False),
        page_host=page_host.astype(np.int64, copy=False),
        host_names=_names_of(host_fps, fingerprints(known_hosts.tolist()), known_hosts),
        fetched=is_fetched,
        urls=_names_of(pages, np.concatenate((fetched_fps, fingerprints(extra))), known_urls),
    )


def read_link_graph(crawl_dir: Path, *, anchor_urls: bool = True) -> LinkGraph:
    """Every node's link log under ``crawl_dir`` as a :class:`~webgather.linkgraph.LinkGraph`
    (:func:`build_link_graph`)."""
    return build_link_graph(crawl_dir, anchor_urls=anchor_urls)
