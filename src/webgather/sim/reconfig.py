"""URLs and state moved when a node joins or leaves, per reconfiguration method. Pure.

The documents' three methods, plus consistent hashing for comparison:

* ``mod-n``        ``fingerprint(host) mod N``: changing N reassigns most hosts; every
  reassigned URL is either re-crawled or its visited entry shipped.
* ``sites-table``  an identical host -> node table on every node. Start: host hash mod N.
  A joiner takes ``floor(H / (N+1))`` sites, one at a time from the node with most
  sites; a leaver's sites go one at a time to the node with fewest. Every node keeps
  the whole table (one entry per host: the host name plus a 4-byte node id).
* ``two-stage``    ``fingerprint(host) mod M`` -> :mod:`webgather.cluster.mapping`
  (``plan_join`` / ``plan_leave``); every node keeps M 4-byte entries.
* ``consistent``   consistent hashing with virtual nodes (adds/removes one node's points).

For each, ``urls_moved`` counts URLs (pages) whose owner changes; ``state_bytes`` is
what has to travel: 16 bytes (an MD5 visited-URL entry, as in the documents) per moved
URL, plus the table update sent to every node (changed table entries x N).
``table_bytes`` is the mapping state each node holds.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from webgather.cluster.mapping import DEFAULT_BUCKETS, initial, moves, plan_join, plan_leave
from webgather.errors import ConfigError
from webgather.sim.partition import Keys, ring_owner
from webgather.sim.tables import render

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["METHODS", "MoveRow", "plot", "reconfigure", "table"]

IntArray = NDArray[np.int64]
METHODS = ("mod-n", "sites-table", "two-stage", "consistent")
VISITED_ENTRY_BYTES = 16
NODE_ID_BYTES = 4


@dataclass(frozen=True)
class MoveRow:
    method: str
    n: int
    event: str
    """``join`` (n -> n+1) or ``leave`` (n -> n-1: the highest-numbered node leaves)."""
    urls_moved: int
    fraction: float
    state_bytes: int
    table_bytes: int


def _pages_per_host(keys: Keys) -> IntArray:
    return np.bincount(keys.page_host, minlength=keys.host_fp.shape[0]).astype(np.int64)


def _site_join(owner: IntArray, n: int) -> IntArray:
    """Sites table after node ``n`` joins nodes ``0..n-1``."""
    held = [list(np.flatnonzero(owner == j)) for j in range(n)]
    heap = [(-len(h), j) for j, h in enumerate(held)]
    heapq.heapify(heap)
    new = owner.copy()
    for _ in range(owner.shape[0] // (n + 1)):
        count, j = heapq.heappop(heap)
        new[held[j].pop()] = n
        heapq.heappush(heap, (count + 1, j))
    return new


def _site_leave(owner: IntArray, n: int) -> IntArray:
    """Sites table after node ``n-1`` leaves nodes ``0..n-1``."""
    counts = np.bincount(owner, minlength=n)
    heap = [(int(counts[j]), j) for j in range(n - 1)]
    heapq.heapify(heap)
    new = owner.copy()
    for site in np.flatnonzero(owner == n - 1):
        count, j = heapq.heappop(heap)
        new[site] = j
        heapq.heappush(heap, (count + 1, j))
    return new


def _two_stage(keys: Keys, n: int, event: str, n_buckets: int) -> tuple[IntArray, IntArray, int]:
    names = [f"node-{j:03d}" for j in range(n)]
    table = initial(names, n_buckets)
    new = plan_join(table, f"node-{n:03d}") if event == "join" else plan_leave(table, names[-1])
    bucket = (keys.host_fp % np.uint64(n_buckets)).astype(np.int64)
    before = np.array([int(o[5:]) for o in table.owners], dtype=np.int64)[bucket]
    after = np.array([int(o[5:]) for o in new.owners], dtype=np.int64)[bucket]
    return before, after, len(moves(table, new))


def _host_owners(keys: Keys, method: str, n: int, event: str, n_buckets: int,
                 vnodes: int) -> tuple[IntArray, IntArray, int, int]:
    """Host owners before and after, changed table entries, and table bytes per node."""
    n_after = n + 1 if event == "join" else n - 1
    fp = keys.host_fp
    if method == "mod-n":
        before = (fp % np.uint64(n)).astype(np.int64)
        return before, (fp % np.uint64(n_after)).astype(np.int64), 0, 0
    if method == "sites-table":
        before = (fp % np.uint64(n)).astype(np.int64)
        after = _site_join(before, n) if event == "join" else _site_leave(before, n)
        changed = np.flatnonzero(before != after)
        entry = np.array([len(h.encode()) + NODE_ID_BYTES for h in keys.host_names], dtype=np.int64)
        return before, after, int(entry[changed].sum()), int(entry.sum())
    if method == "two-stage":
        before, after, changed_buckets = _two_stage(keys, n, event, n_buckets)
        return before, after, changed_buckets * NODE_ID_BYTES, n_buckets * NODE_ID_BYTES
    if method == "consistent":
        before = ring_owner(fp, n, vnodes)
        after = ring_owner(fp, n_after, vnodes)  # the ring of nodes 0..n_after-1
        return before, after, vnodes * 8, n_after * vnodes * (8 + NODE_ID_BYTES)
    raise ConfigError(f"unknown reconfiguration method {method!r}; choose from {METHODS}")


def reconfigure(keys: Keys, n: int, methods: Sequence[str] = METHODS,
                n_buckets: int = DEFAULT_BUCKETS, vnodes: int = 100) -> list[MoveRow]:
    """Rows for a join (n -> n+1) and a leave (n -> n-1) under every method."""
    if n < 2:
        raise ConfigError(f"a join/leave comparison needs n >= 2, got {n}")
    pages = _pages_per_host(keys)
    total = int(pages.sum())
    rows = []
    for method in methods:
        for event in ("join", "leave"):
            before, after, update_bytes, table_bytes = _host_owners(
                keys, method, n, event, n_buckets, vnodes)
            moved = int(pages[before != after].sum())
            n_after = n + 1 if event == "join" else n - 1
            state = moved * VISITED_ENTRY_BYTES + update_bytes * n_after
            rows.append(MoveRow(method, n, event, moved, moved / max(1, total), state, table_bytes))
    return rows


def table(rows: Sequence[MoveRow]) -> str:
    """URLs and bytes moved on a join or leave, per method."""
    headers = ["method", "n", "event", "urls_moved", "fraction", "state_bytes", "table_bytes/node"]
    body = [[r.method, r.n, r.event, r.urls_moved, r.fraction, r.state_bytes, r.table_bytes]
            for r in rows]
    ideal = ", ".join(sorted({f"1/(n+1)={1 / (r.n + 1):.3f}" for r in rows if r.event == "join"}))
    return render(headers, body, f"reconfiguration (ideal join fraction: {ideal})")


def plot(rows: Sequence[MoveRow], fig: Figure) -> None:
    """Fraction of URLs moved on a join, per method, against n."""
    ax = fig.subplots()
    for method in dict.fromkeys(r.method for r in rows):
        mine = [r for r in rows if r.method == method and r.event == "join"]
        ax.plot([r.n for r in mine], [r.fraction for r in mine], marker="o", label=method)
    ns = sorted({r.n for r in rows})
    ax.plot(ns, [1 / (k + 1) for k in ns], linestyle="--", color="grey", label="1/(n+1)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("nodes before the join")
    ax.set_ylabel("fraction of URLs moved")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.suptitle("URLs moved when a node joins")
