"""Partition strategies compared on a link graph: load balance and cross-URL traffic. Pure.

Strategies (``STRATEGIES``), each mapping every page to one of ``n`` nodes:

* ``ip-sum``     WebGather 2.0's ``DNS(host) mod n``: the sum of the host IP's four
  octets mod n. IPs come from a resolve map (``host -> address``, e.g. the
  ``host address`` file of ``crawl --resolve``; an IPv6 address sums its 16 bytes)
  when given, else a *synthetic* IPv4 address derived from the host's fingerprint
  (its low four bytes). Synthetic IPs are one per host; real ones are shared by
  virtual hosts, which makes the real strategy coarser than simulated here.
* ``host-hash``  ``fingerprint(host) mod n``.
* ``two-stage``  ``fingerprint(host) mod M`` -> bucket table (:mod:`webgather.cluster.mapping`).
* ``consistent`` consistent hashing of the host fingerprint on a ring with ``vnodes``
  virtual points per node.
* ``url-hash``   the page's own key mod n (perfect balance, most cross links).

Metrics (exact definitions):

* *normalized share* of node i: ``x_i = n * pages_i / total`` (an even split is 1).
  ``var_norm = mean_i (x_i - 1)^2`` (population variance). ``var_share`` is the
  variance of the raw shares ``pages_i / total`` (= ``var_norm / n^2``). The
  documents do not spell out their normalization; their Table 1 values
  (1e-5 .. 1e-3) are on the scale of ``var_share``, so that is what we compare.
  ``expected`` is ``var_norm`` for units (hosts; pages for url-hash) placed
  uniformly at random, ``(n - 1) * sum_u w_u^2`` with ``w_u`` the unit's page share:
  the floor set by the granularity of the partition, not by the hash.
* *interval variance*: the crawl order (breadth-first by default) is cut into
  ``n_intervals`` equal runs of pages ("hours"); per run ``var_norm`` and ``var_share``;
  we report the mean of the first and the mean and max of the second.
* *cross link*: a link from a fetched page whose source and destination pages are
  on different nodes; each costs one URL transfer. ``bytes`` are the URLs' UTF-8
  lengths when the graph has URLs, else 128 B (the documents' bound).
  ``messages``: per (source node, destination node) pair, ``ceil(count / batch_urls)``.
  ``unique`` counts distinct (source node, destination page) pairs: the traffic with
  a perfect sender-side cache of URLs already sent.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from webgather.cluster.mapping import DEFAULT_BUCKETS, initial
from webgather.errors import AnalysisError, ConfigError
from webgather.linkgraph import LinkGraph
from webgather.sim.tables import render
from webgather.sim.traces import adjacency, bfs_order, default_seeds, name_keys, page_keys
from webgather.urls import fingerprints

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "DOC_URL_BYTES",
    "NODE_COUNTS",
    "STRATEGIES",
    "Keys",
    "PartitionResult",
    "PartitionRow",
    "Traffic",
    "assign",
    "cross_traffic",
    "host_owner",
    "interval_variance",
    "keys_of",
    "load_variance",
    "plot",
    "ring_owner",
    "run",
    "table",
]

IntArray = NDArray[np.int64]
STRATEGIES = ("ip-sum", "host-hash", "two-stage", "consistent", "url-hash")
NODE_COUNTS = (2, 4, 8, 16, 32, 64)
DOC_URL_BYTES = 128


@dataclass(frozen=True)
class Keys:
    """Per-host and per-page inputs of every strategy, computed once per graph."""

    host_fp: NDArray[np.uint64]
    ip_sum: IntArray
    page_key: NDArray[np.uint64]
    page_host: IntArray
    url_bytes: IntArray
    host_names: tuple[str, ...]


def _ip_sums(host_names: Sequence[str], host_fp: NDArray[np.uint64],
             resolve: Mapping[str, str] | None) -> IntArray:
    """Sum of the address bytes of every host: resolved, else four bytes of its fingerprint."""
    octets = (host_fp[:, None] >> np.array([0, 8, 16, 24], dtype=np.uint64)) & np.uint64(255)
    sums = octets.astype(np.int64).sum(axis=1)
    for i, name in enumerate(host_names):
        ip = (resolve or {}).get(name) or (resolve or {}).get(name.rsplit(":", 1)[0])
        if ip is None:
            continue
        try:
            sums[i] = sum(ipaddress.ip_address(ip).packed)
        except ValueError:
            raise AnalysisError(f"resolve map: {name!r} -> {ip!r} is not an IP address") from None
    return np.asarray(sums, dtype=np.int64)


def keys_of(graph: LinkGraph, resolve: Mapping[str, str] | None = None) -> Keys:
    """Fingerprints, IP sums and URL sizes for ``graph`` (see the module doc on synthetic IPs)."""
    host_fp = name_keys(graph.host_names, graph.n_hosts)
    ip_sum = _ip_sums(graph.host_names, host_fp, resolve)
    url_bytes = np.full(graph.n_pages, DOC_URL_BYTES, dtype=np.int64)
    if graph.urls is not None:
        known = np.fromiter((len(u.encode("utf-8", "surrogatepass")) for u in graph.urls),
                            dtype=np.int64, count=graph.n_pages)
        url_bytes = np.where(known > 0, known, DOC_URL_BYTES)
    return Keys(host_fp, ip_sum, page_keys(graph), np.asarray(graph.page_host, dtype=np.int64),
                url_bytes, graph.host_names)


def ring_owner(host_fp: NDArray[np.uint64], n: int, vnodes: int) -> IntArray:
    labels = [f"node-{j}#{v}" for j in range(n) for v in range(vnodes)]
    points = fingerprints(labels)
    node_of_point = np.repeat(np.arange(n, dtype=np.int64), vnodes)
    order = np.argsort(points, kind="stable")
    ring, ring_node = points[order], node_of_point[order]
    at = np.searchsorted(ring, host_fp, side="left") % ring.shape[0]
    return np.asarray(ring_node[at], dtype=np.int64)


def host_owner(keys: Keys, strategy: str, n: int, n_buckets: int = DEFAULT_BUCKETS,
               vnodes: int = 100) -> IntArray:
    """Node of every host under a host-level strategy."""
    if strategy == "ip-sum":
        return keys.ip_sum % n
    if strategy == "host-hash":
        return (keys.host_fp % np.uint64(n)).astype(np.int64)
    if strategy == "two-stage":
        table = initial([f"node-{j:03d}" for j in range(n)], n_buckets)
        owner_index = np.array([int(o[5:]) for o in table.owners], dtype=np.int64)
        return owner_index[(keys.host_fp % np.uint64(n_buckets)).astype(np.int64)]
    if strategy == "consistent":
        return ring_owner(keys.host_fp, n, vnodes)
    raise ConfigError(f"{strategy!r} is not a host-level strategy")


def assign(keys: Keys, strategy: str, n: int, n_buckets: int = DEFAULT_BUCKETS,
           vnodes: int = 100) -> IntArray:
    """Node of every page under ``strategy`` (one of :data:`STRATEGIES`)."""
    if n < 1:
        raise ConfigError(f"node count must be >= 1, got {n}")
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown partition strategy {strategy!r}; choose from {STRATEGIES}")
    if strategy == "url-hash":
        return (keys.page_key % np.uint64(n)).astype(np.int64)
    return host_owner(keys, strategy, n, n_buckets, vnodes)[keys.page_host]


def load_variance(page_node: IntArray, n: int) -> tuple[float, float]:
    """``(var_norm, var_share)`` of the per-node page counts (see the module doc)."""
    total = page_node.shape[0]
    if total == 0:
        raise AnalysisError("no pages to measure load on")
    share = np.bincount(page_node, minlength=n)[:n] / total
    var_norm = float(((n * share - 1.0) ** 2).mean())
    return var_norm, var_norm / (n * n)


def interval_variance(ordered_node: IntArray, n: int, n_intervals: int) -> NDArray[np.float64]:
    """``var_norm`` of each of ``n_intervals`` equal runs of the crawl order."""
    if n_intervals < 1 or ordered_node.shape[0] < n_intervals:
        raise ConfigError(f"need >= 1 interval and >= 1 page per interval, got {n_intervals}")
    interval = np.arange(ordered_node.shape[0]) * n_intervals // ordered_node.shape[0]
    counts = np.bincount(interval * n + ordered_node, minlength=n_intervals * n)
    counts = counts.reshape(n_intervals, n).astype(np.float64)
    share = counts / counts.sum(axis=1, keepdims=True)
    return np.asarray(((n * share - 1.0) ** 2).mean(axis=1), dtype=np.float64)


@dataclass(frozen=True)
class Traffic:
    cross_links: int
    cross_fraction: float
    messages: int
    bytes: int
    unique_cross: int


def cross_traffic(src_node: IntArray, dst_node: IntArray, dst_page: IntArray,
                  url_bytes: IntArray, n: int, batch_urls: int) -> Traffic:
    """Cross links between nodes, batched messages and bytes (see the module doc)."""
    if batch_urls < 1:
        raise ConfigError(f"batch_urls must be >= 1, got {batch_urls}")
    cross = src_node != dst_node
    pair_counts = np.bincount(src_node[cross] * n + dst_node[cross], minlength=n * n)
    messages = int(np.ceil(pair_counts / batch_urls).sum())
    unique = np.unique(src_node[cross] * (int(dst_page.max(initial=0)) + 1) + dst_page[cross]).size
    total = max(1, src_node.shape[0])
    return Traffic(int(cross.sum()), float(cross.sum()) / total, messages,
                   int(url_bytes[dst_page[cross]].sum()), int(unique))


@dataclass(frozen=True)
class PartitionRow:
    strategy: str
    n: int
    var_norm: float
    var_share: float
    expected_var_norm: float
    """``var_norm`` expected if the partition units (hosts, or pages for url-hash) were placed
    uniformly at random: ``(n - 1) * sum_u w_u^2`` with ``w_u`` a unit's share of the pages."""
    interval_var_mean: float
    """Mean over intervals of ``var_norm``."""
    interval_share_mean: float
    interval_share_max: float
    """Mean and max over intervals of ``var_share`` (the documents' Table 1 scale)."""
    cross_fraction: float
    messages_per_page: float
    bytes_per_page: float
    unique_cross_per_page: float


@dataclass(frozen=True)
class PartitionResult:
    rows: tuple[PartitionRow, ...]
    n_pages: int
    n_hosts: int
    n_links: int
    batch_urls: int
    n_intervals: int


def run(graph: LinkGraph, nodes: Sequence[int] = NODE_COUNTS,
        strategies: Sequence[str] = STRATEGIES, *, n_buckets: int = DEFAULT_BUCKETS,
        vnodes: int = 100, batch_urls: int = 100, n_intervals: int = 10,
        seeds: Sequence[int] | None = None, resolve: Mapping[str, str] | None = None,
        order: IntArray | None = None) -> PartitionResult:
    """Every strategy at every node count, on the pages a breadth-first crawl from ``seeds``
    reaches, in that order (or on ``order``: e.g. a recorded crawl's :func:`crawl_order`)."""
    keys = keys_of(graph, resolve)
    if order is None:
        seed_pages = default_seeds(graph) if seeds is None else np.asarray(seeds, dtype=np.int64)
        order = bfs_order(graph, seed_pages, adjacency(graph))
    fetched = np.asarray(graph.fetched, dtype=bool)
    crawled = order[fetched[order]]
    if crawled.size < n_intervals:
        raise AnalysisError(f"the crawl from the seeds fetches only {crawled.size} pages")
    reached = np.zeros(graph.n_pages, dtype=bool)
    reached[crawled] = True
    link_mask = reached[np.asarray(graph.src, dtype=np.int64)]
    src = np.asarray(graph.src, dtype=np.int64)[link_mask]
    dst = np.asarray(graph.dst, dtype=np.int64)[link_mask]
    host_w = np.bincount(keys.page_host[crawled], minlength=graph.n_hosts) / crawled.size
    concentration = {"url-hash": 1.0 / crawled.size}
    rows = []
    for strategy in strategies:
        for n in nodes:
            expected = (n - 1) * concentration.get(strategy, float((host_w**2).sum()))
            page_node = assign(keys, strategy, n, n_buckets, vnodes)
            var_norm, var_share = load_variance(page_node[crawled], n)
            per_interval = interval_variance(page_node[crawled], n, n_intervals)
            traffic = cross_traffic(page_node[src], page_node[dst], dst, keys.url_bytes, n, batch_urls)
            pages = float(crawled.size)
            rows.append(PartitionRow(
                strategy, n, var_norm, var_share, expected, float(per_interval.mean()),
                float(per_interval.mean()) / n**2, float(per_interval.max()) / n**2,
                traffic.cross_fraction, traffic.messages / pages,
                traffic.bytes / pages, traffic.unique_cross / pages))
    return PartitionResult(tuple(rows), int(crawled.size), graph.n_hosts, int(src.size),
                           batch_urls, n_intervals)


def table(result: PartitionResult) -> str:
    """Load variance and cross-URL traffic per strategy and node count."""
    headers = ["strategy", "n", "var_norm", "expected", "var_share", "ivar_norm_mean", "ivar_share_mean",
               "ivar_share_max",
               "cross_frac", "msgs/page", "bytes/page", "uniq_cross/page"]
    rows = [[r.strategy, r.n, r.var_norm, r.expected_var_norm, r.var_share, r.interval_var_mean,
             r.interval_share_mean,
             r.interval_share_max,
             r.cross_fraction, r.messages_per_page, r.bytes_per_page, r.unique_cross_per_page]
            for r in result.rows]
    title = (f"partition: {result.n_pages:,} pages crawled, {result.n_hosts:,} hosts, "
             f"{result.n_links:,} links; batch {result.batch_urls} URLs; "
             f"{result.n_intervals} intervals ('hours')")
    return render(headers, rows, title)


def plot(result: PartitionResult, fig: Figure) -> None:
    """Left: raw-share variance vs n (log); right: cross-URL bytes per page vs n."""
    left, right = fig.subplots(1, 2)
    for strategy in dict.fromkeys(r.strategy for r in result.rows):
        rows = [r for r in result.rows if r.strategy == strategy]
        ns = [r.n for r in rows]
        left.plot(ns, [max(r.var_share, 1e-12) for r in rows], marker="o", label=strategy)
        right.plot(ns, [r.bytes_per_page for r in rows], marker="o", label=strategy)
    for ax, label in ((left, "variance of per-node share"), (right, "cross-URL bytes per page")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    left.set_yscale("log")
    left.legend(fontsize="small")
    fig.suptitle(f"Partition strategies on {result.n_pages:,} pages")
