"""Out-degrees and link targets of content pages, vectorized. Pure.

One set of numpy functions serves both users: a single page (arrays of its
~25 links) when it is rendered, and every page at once for
:func:`build_link_graph`. So the page at a URL and the graph always agree.

The degree model
----------------
* Out-degree: lognormal with mean ``mean_out_degree`` and log-sd
  ``out_degree_sigma``, rounded, at least 1, capped at ``max_out_degree``
  (dying pages have none: their links must not vanish when they die).
* Each link stays on its host, except with probability ``cross_host_share``
  where the target host is drawn from all hosts in proportion to their size.
* Within the target host, the page is drawn by *rank*: rank r (0 = the home
  page) has probability ~ (r + 1)^-a with a = 1 / (gamma - 1), gamma =
  ``in_degree_exponent`` (inverse CDF of the continuous law, so O(1) a draw,
  no per-host tables). Ranks map to page indices through a per-host affine
  bijection, so popularity does not follow the numbering.

This is the static form of preferential attachment (a fitness / Zipf-rank
model, as in Chung-Lu graphs): a page's expected in-degree is proportional to
rank^-a, hence P(in-degree > k) ~ k^(-1/a) and the density exponent is
1 + 1/a = gamma. A sequential Barabasi-Albert process would give the same tail
but cannot be evaluated lazily for one page. Duplicate targets within a page
arise naturally (popular pages are drawn more than once) and are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from webgather.linkgraph import LinkGraph
from webgather.testweb.hosts import HostTable
from webgather.testweb.params import WebParams
from webgather.testweb.rand import derive_arr, lognormal_from_unit_arr, unit_arr

__all__ = ["ContentTable", "build_link_graph", "content_table", "is_dying", "out_degrees", "page_keys", "targets"]

S_DEGREE = 1
S_DYING = 2
S_DIE_AT = 23
S_DIE_STATUS = 24
S_CROSS = 1 << 20
S_HOST = 2 << 20
S_RANK = 3 << 20


def page_keys(hosts: HostTable, host_ids: np.ndarray, local: np.ndarray) -> np.ndarray:
    """uint64 key of content page ``local`` of host ``host_ids`` (elementwise)."""
    return derive_arr(hosts.keys[host_ids], np.asarray(local, dtype=np.uint64) + np.uint64(1))


def is_dying(keys: np.ndarray, local: np.ndarray, params: WebParams) -> np.ndarray:
    """bool: the page dies at a known time (and so carries no links). Home pages never die."""
    drawn = unit_arr(derive_arr(keys, S_DYING)) < params.dying_share
    dying: np.ndarray = np.logical_and(drawn, np.asarray(local) != 0)
    return dying


def out_degrees(keys: np.ndarray, local: np.ndarray, params: WebParams) -> np.ndarray:
    """int64 followable content links of each page (0 for dying pages, else at least 1)."""
    u = unit_arr(derive_arr(keys, S_DEGREE))
    raw = lognormal_from_unit_arr(u, params.mean_out_degree, params.out_degree_sigma)
    degree: np.ndarray = np.clip(np.rint(raw), 1, params.max_out_degree).astype(np.int64)
    degree[is_dying(keys, local, params)] = 0
    return degree


def _rank(u: np.ndarray, n: np.ndarray, a: float) -> np.ndarray:
    """Rank in [0, n) with P(rank = r) ~ (r + 1)^-a (continuous inverse CDF on [1, n + 1))."""
    n_f = n.astype(np.float64)
    if abs(a - 1.0) < 1e-9:
        x = np.power(n_f + 1.0, u)
    else:
        e = 1.0 - a
        x = np.power(1.0 + u * (np.power(n_f + 1.0, e) - 1.0), 1.0 / e)
    rank: np.ndarray = np.maximum(np.minimum(np.floor(x).astype(np.int64) - 1, n - 1), 0)
    return rank


def targets(
    hosts: HostTable, params: WebParams, src_host: np.ndarray, keys: np.ndarray, link: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(target host, target page index) of link number ``link`` of the page with key ``keys``."""
    link_u = np.asarray(link, dtype=np.uint64)
    cross = unit_arr(derive_arr(keys, link_u + np.uint64(S_CROSS))) < params.cross_host_share
    host_u = unit_arr(derive_arr(keys, link_u + np.uint64(S_HOST)))
    drawn = np.minimum(np.searchsorted(hosts.cross_cdf, host_u, side="right"), hosts.n_hosts - 1)
    dst_host = np.where(cross, drawn, src_host).astype(np.int64)
    n = hosts.pages[dst_host]
    a = 1.0 / (params.in_degree_exponent - 1.0)
    rank = _rank(unit_arr(derive_arr(keys, link_u + np.uint64(S_RANK))), n, a)
    m = np.maximum(n - 1, 1)
    permuted = 1 + ((rank - 1) * hosts.perm_mult[dst_host] + hosts.perm_add[dst_host]) % m
    local = np.where(rank == 0, 0, permuted)
    return dst_host, local.astype(np.int64)


@dataclass(frozen=True, eq=False)
class ContentTable:
    """Every content page's links and death at once (global page ids, as in LinkGraph)."""

    page_host: np.ndarray
    starts: np.ndarray
    """int64, n_pages + 1: the links of page g are dst[starts[g]:starts[g + 1]]."""
    dst: np.ndarray
    """int64 global target page id of each link."""
    dying: np.ndarray
    die_at_s: np.ndarray
    die_status: np.ndarray


def content_table(hosts: HostTable, params: WebParams) -> ContentTable:
    """The vectorized twin of rendering every content page (same draws, no HTML)."""
    total = int(hosts.offsets[-1])
    page_host = np.repeat(np.arange(hosts.n_hosts, dtype=np.int64), hosts.pages)
    local = np.arange(total, dtype=np.int64) - hosts.offsets[page_host]
    keys = page_keys(hosts, page_host, local)
    degree = out_degrees(keys, local, params)
    src = np.repeat(np.arange(total, dtype=np.int64), degree)
    starts = np.concatenate(([0], np.cumsum(degree))).astype(np.int64)
    link = np.arange(src.shape[0], dtype=np.int64) - np.repeat(starts[:-1], degree)
    dst_host, dst_local = targets(hosts, params, page_host[src], keys[src], link)
    return ContentTable(
        page_host=page_host, starts=starts, dst=(hosts.offsets[dst_host] + dst_local).astype(np.int64),
        dying=degree == 0,
        die_at_s=params.epoch_s + unit_arr(derive_arr(keys, S_DIE_AT)) * params.death_horizon_s,
        die_status=np.where(derive_arr(keys, S_DIE_STATUS) % np.uint64(2) == 1, 404, 410),
    )


def build_link_graph(hosts: HostTable, params: WebParams, urls: tuple[str, ...] | None) -> LinkGraph:
    """All content pages and their followable content links (duplicates kept, in page order)."""
    table = content_table(hosts, params)
    degree = np.diff(table.starts)
    src = np.repeat(np.arange(degree.shape[0], dtype=np.int64), degree)
    port = "" if params.port == 80 else f":{params.port}"
    return LinkGraph(
        src=src, dst=table.dst, page_host=table.page_host,
        host_names=tuple(name + port for name in hosts.names),
        fetched=np.ones(degree.shape[0], dtype=bool), urls=urls,
    )
