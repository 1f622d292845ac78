"""A link graph as arrays: what the analysis and the simulator consume. Pure.

Pages are numbered ``0..n_pages-1``; hosts ``0..n_hosts-1``. Edges are
parallel ``int64`` arrays ``src -> dst`` (duplicates allowed unless a producer
says otherwise). ``fetched`` marks pages whose out-links are known (a crawl's
link log knows links to pages it never fetched). Producers:
:meth:`webgather.testweb.graph.WebModel.link_graph` (the synthetic web, no
HTTP) and :func:`webgather.store.graphread.read_link_graph` (a crawl's link log).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LinkGraph"]


@dataclass(frozen=True)
class LinkGraph:
    src: np.ndarray
    """int64 source page ids, one per link."""
    dst: np.ndarray
    """int64 destination page ids, parallel to ``src``."""
    page_host: np.ndarray
    """int64 host id of each page."""
    host_names: tuple[str, ...]
    """Host key of each host id."""
    fetched: np.ndarray
    """bool per page: its out-links are in the graph."""
    urls: tuple[str, ...] | None = None
    """Canonical URL of each page, when the producer has them."""

    @property
    def n_pages(self) -> int:
        return int(self.page_host.shape[0])

    @property
    def n_hosts(self) -> int:
        return len(self.host_names)

    @property
    def n_links(self) -> int:
        return int(self.src.shape[0])

    def __post_init__(self) -> None:
        if self.src.shape != self.dst.shape:
            raise ValueError("src and dst must be parallel arrays")
        if self.fetched.shape != self.page_host.shape:
            raise ValueError("fetched and page_host must have one entry per page")
        if self.urls is not None and len(self.urls) != self.n_pages:
            raise ValueError("urls must have one entry per page")
