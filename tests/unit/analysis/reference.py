"""Tiny pure-Python reference implementations the analysis is checked against.

Deliberately naive (lists, dicts, sets, loops): BFS, Tarjan's SCC, power
iteration for PageRank and HITS, brute-force K(i, j) enumeration. Only for
graphs of a few dozen pages.
"""

from __future__ import annotations

import itertools
import random
from collections import deque

import numpy as np

from webgather.linkgraph import LinkGraph

Adj = list[set[int]]


def random_graph(rng: random.Random, n: int, m: int, n_hosts: int = 3) -> LinkGraph:
    """A small random multigraph (self-links and duplicates included)."""
    src = [rng.randrange(n) for _ in range(m)]
    dst = [rng.randrange(n) for _ in range(m)]
    hosts = [rng.randrange(n_hosts) for _ in range(n)]
    return LinkGraph(
        np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.asarray(hosts, dtype=np.int64),
        tuple(f"h{i}" for i in range(n_hosts)), np.ones(n, dtype=bool),
    )


def adjacency(graph: LinkGraph) -> Adj:
    """Distinct out-neighbours without self-links."""
    adj: Adj = [set() for _ in range(graph.n_pages)]
    for s, d in zip(graph.src.tolist(), graph.dst.tolist()):
        if s != d:
            adj[s].add(d)
    return adj


def reverse(adj: Adj) -> Adj:
    rev: Adj = [set() for _ in adj]
    for s, outs in enumerate(adj):
        for d in outs:
            rev[d].add(s)
    return rev


def bfs(adj: Adj, sources: list[int]) -> dict[int, int]:
    """Distance of every page reachable from any source."""
    dist = {s: 0 for s in sources}
    queue = deque(sources)
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def tarjan(adj: Adj) -> list[list[int]]:
    """Strongly connected components (recursive Tarjan; small graphs only)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    comps: list[list[int]] = []

    def visit(v: int) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in range(len(adj)):
        if v not in index:
            visit(v)
    return comps


def pagerank(adj: Adj, damping: float = 0.85, iterations: int = 500) -> list[float]:
    n = len(adj)
    rank = [1.0 / n] * n
    for _ in range(iterations):
        dangling = sum(rank[v] for v in range(n) if not adj[v])
        new = [(1.0 - damping) / n + damping * dangling / n] * n
        for v in range(n):
            for w in adj[v]:
                new[w] += damping * rank[v] / len(adj[v])
        rank = new
    return rank


def hits(adj: Adj, iterations: int = 500) -> tuple[list[float], list[float]]:
    n = len(adj)
    hub = [1.0] * n
    auth = [0.0] * n
    for _ in range(iterations):
        auth = [0.0] * n
        for v in range(n):
            for w in adj[v]:
                auth[w] += hub[v]
        total = sum(auth)
        auth = [a / total for a in auth]
        hub = [sum(auth[w] for w in adj[v]) for v in range(n)]
        total = sum(hub)
        hub = [h / total for h in hub]
    return hub, auth


def cores(links: set[tuple[int, int]], min_fans: int, j: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every j-set of centers with >= min_fans common fans, by trying all j-sets."""
    fans_of: dict[int, set[int]] = {}
    for f, c in links:
        fans_of.setdefault(c, set()).add(f)
    found = []
    for centers in itertools.combinations(sorted(fans_of), j):
        common = set.intersection(*(fans_of[c] for c in centers))
        if len(common) >= min_fans:
            found.append((centers, tuple(sorted(common))))
    return found
