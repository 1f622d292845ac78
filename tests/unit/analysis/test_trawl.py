"""Trawling for bipartite cores against brute-force K(i, j) enumeration."""

from __future__ import annotations

import random

import numpy as np

from webgather.analysis.degrees import effective_in_degree
from webgather.analysis.graphops import simple_graph
from webgather.analysis.trawl import candidate_links, enumerate_cores, prune, trawl
from webgather.linkgraph import LinkGraph

from .reference import adjacency, cores, reverse


def _web(rng: random.Random, n_pages: int, n_hosts: int, p_link: float, planted: int) -> LinkGraph:
    """Random cross-host links plus planted complete bipartite groups."""
    hosts = [rng.randrange(n_hosts) for _ in range(n_pages)]
    edges = [(s, d) for s in range(n_pages) for d in range(n_pages) if rng.random() < p_link]
    for _ in range(planted):
        fans = rng.sample(range(n_pages), rng.randint(3, 5))
        centers = rng.sample(range(n_pages), rng.randint(3, 5))
        edges += [(f, c) for f in fans for c in centers]
    src, dst = zip(*edges)
    return LinkGraph(np.array(src), np.array(dst), np.array(hosts), tuple(map(str, range(n_hosts))), np.ones(n_pages, bool))


def _reference_links(g: LinkGraph) -> set[tuple[int, int]]:
    """Steps 1-3 by hand: cross-host links from fans (>= 6 other hosts) to centers (eff. in <= 9)."""
    adj = adjacency(g)
    hosts = g.page_host.tolist()
    rev = reverse(adj)
    effective = []
    for page, sources in enumerate(rev):
        per_host: dict[int, int] = {}
        for s in sources:
            if hosts[s] != hosts[page]:
                per_host[hosts[s]] = per_host.get(hosts[s], 0) + 1
        effective.append(sum(min(c, 10) for c in per_host.values()))
    links = set()
    for f, outs in enumerate(adj):
        cross = {d for d in outs if hosts[d] != hosts[f]}
        if len({hosts[d] for d in cross}) >= 6:
            links |= {(f, c) for c in cross if effective[c] <= 9}
    return links


def test_cores_match_brute_force() -> None:
    rng = random.Random(31)
    total = 0
    for trial in range(12):
        g = _web(rng, rng.randint(20, 45), 12, rng.choice([0.1, 0.2, 0.3]), planted=rng.randint(0, 4))
        sg = simple_graph(g)
        effective = effective_in_degree(sg, g.page_host)
        links = _reference_links(g)
        _, src, dst, _, _ = candidate_links(sg, g.page_host, effective)
        assert set(zip(src.tolist(), dst.tolist())) == links
        result = trawl(sg, g.page_host, effective, np.random.default_rng(trial), steps=4)
        for j in (3, 4):
            expected = cores(links, 3, j)
            total += len(expected)
            assert result.growth[-1].cores[j] == len(expected)
            found, truncated = enumerate_cores(*prune(src, dst, 3, j), 3, j)
            assert sorted(found) == sorted(expected) and not truncated
    assert total > 0  # the planted groups made some cores


def test_counts_grow_with_the_candidate_fans() -> None:
    rng = random.Random(32)
    g = _web(rng, 60, 15, 0.12, planted=6)
    sg = simple_graph(g)
    result = trawl(sg, g.page_host, effective_in_degree(sg, g.page_host), np.random.default_rng(1), steps=5)
    assert [c.fraction for c in result.growth] == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert [c.fans for c in result.growth] == [-(-result.fans * k // 5) for k in range(1, 6)]
    for j in (3, 4):
        counts = [c.cores[j] for c in result.growth]
        assert counts == sorted(counts)  # more fans can only complete more cores
    assert result.fan_histogram[3] and sum(result.fan_histogram[3].values()) == result.growth[-1].cores[3]
    centers, fans = result.examples[3][0]
    assert len(centers) == 3 and len(fans) >= 3


def test_pruning_reaches_a_fixpoint_and_keeps_every_core() -> None:
    rng = random.Random(33)
    links = {(rng.randrange(30), 100 + rng.randrange(20)) for _ in range(150)}
    src = np.array([f for f, _ in links])
    dst = np.array([c for _, c in links])
    ps, pd = prune(src, dst, 3, 3)
    assert all(np.count_nonzero(ps == f) >= 3 for f in ps)
    assert all(np.count_nonzero(pd == c) >= 3 for c in pd)
    kept = set(zip(ps.tolist(), pd.tolist()))
    for centers, fans in cores(links, 3, 3):
        assert {(f, c) for f in fans for c in centers} <= kept


def test_enumeration_stops_at_max_cores() -> None:
    fans, centers = range(6), range(100, 108)  # K(6, 8): C(8, 3) = 56 center triples
    src = np.array([f for f in fans for _ in centers])
    dst = np.array([c for _ in fans for c in centers])
    found, truncated = enumerate_cores(src, dst, 3, 3)
    assert len(found) == 56 and not truncated
    assert all(core[1] == tuple(fans) for core in found)
    found, truncated = enumerate_cores(src, dst, 3, 3, max_cores=10)
    assert len(found) == 10 and truncated


def test_popular_centers_are_removed() -> None:
    # 12 fans on 12 hosts link to one center on host 12 and to 6 filler pages on hosts 13..18
    n_fans, center = 12, 12
    hosts = list(range(12)) + [12] + list(range(13, 19))
    src = [f for f in range(n_fans) for _ in range(7)]
    dst = [d for _ in range(n_fans) for d in [center, 13, 14, 15, 16, 17, 18]]
    g = LinkGraph(np.array(src), np.array(dst), np.array(hosts), tuple(map(str, range(19))), np.ones(19, bool))
    sg = simple_graph(g)
    effective = effective_in_degree(sg, g.page_host)
    fan_ids, s, d, cross, removed = candidate_links(sg, g.page_host, effective)
    assert fan_ids.tolist() == list(range(12)) and cross == 84
    assert removed == 7 and s.size == 0  # every target has 12 linking hosts > 9
