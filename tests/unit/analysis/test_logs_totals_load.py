"""Crawl-log entries as arrays, totals, and the per-node load variance."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from webgather.analysis.fetchlog import fetch_table
from webgather.analysis.graphops import simple_graph
from webgather.analysis.load import choose_interval_s, node_load
from webgather.analysis.totals import crawl_totals, link_totals
from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph


def _entry(url: str, at: float, **fields: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "url": url, "host": url.split("/")[2], "status": 200, "error": None, "bytes": 100, "fetched_at": at,
    }
    entry.update(fields)
    return entry


ENTRIES = [
    _entry("http://a.test/", 10.0, node="n1", bytes=1000),
    _entry("http://a.test/x", 11.0, node="n1", bytes=3000, retry=True, status=503),  # earlier attempt
    _entry("http://a.test/x", 12.0, node="n1", bytes=2000),
    _entry("http://b.test/", 13.0, node="n2", status=404, bytes=50),
    _entry("http://b.test/robots.txt", 9.0, node="n2", kind="robots", bytes=20),
    _entry("http://b.test/no", 14.0, node="n2", status=None, error="robots", bytes=0),
    _entry("http://c.test/", 15.0, node="n2", status=None, error="timeout", bytes=0),
    _entry("http://c.test/big", 16.0, node="n1", status=200, error="too_large", bytes=9000),
    _entry("http://c.test/map.xml", 17.0, node="n1", kind="sitemap", bytes=500),
    {"url": "http://d.test/", "host": "d.test", "status": "200", "bytes": 1, "fetched_at": 1.0},  # bad status
    {"url": "http://d.test/", "host": "d.test", "status": 200, "bytes": -1, "fetched_at": 1.0},  # bad bytes
    {"url": "http://d.test/", "host": "d.test", "status": 200, "bytes": 1},  # no time
    {"url": "http://d.test/", "host": "d.test", "status": 200, "bytes": 1, "fetched_at": 1.0, "kind": "x"},
    ["not", "an", "object"],
]


def test_fetch_table_keeps_final_valid_entries() -> None:
    table = fetch_table(ENTRIES)  # type: ignore[arg-type]
    assert table.n_entries == 8 and table.retries == 1 and table.bad_entries == 5
    assert table.node_names == ("n1", "n2")
    assert np.count_nonzero(table.fetches()) == 6  # not robots.txt, not the robots-refused URL
    assert np.count_nonzero(table.pages()) == 3  # a/, a/x and c/big (a 200, archived truncated)
    assert table.fetched_at.dtype == np.float64


def test_iso_timestamps_are_read() -> None:
    table = fetch_table([_entry("http://a.test/", "2024-01-01T00:00:10Z"), _entry("http://a.test/b", "garbage")])  # type: ignore[arg-type]
    assert table.n_entries == 1 and table.bad_entries == 1
    assert table.fetched_at[0] == 1704067210.0


def test_crawl_totals_by_hand() -> None:
    totals = crawl_totals(fetch_table(ENTRIES))  # type: ignore[arg-type]
    # fetches: a/, a/x, b/ (404), c/ (timeout), c/big (200 too_large), c/map.xml (sitemap)
    assert totals.fetches == 6 and totals.pages == 3  # 2xx pages: a/, a/x, c/big
    assert totals.hosts == 2 and totals.pages_per_host == 1.5
    assert totals.avg_page_bytes == pytest.approx((1000 + 2000 + 9000) / 3)
    assert totals.median_page_bytes == 2000
    assert totals.robots_excluded == 1 and totals.retries == 1 and totals.bad_entries == 5
    assert totals.status_mix == {"200": 3, "200:too_large": 1, "404": 1, "timeout": 1}


def test_link_totals_by_hand() -> None:
    # pages 0,1 on host 0; 2 on host 1; page 3 never fetched
    g = LinkGraph(np.array([0, 0, 0, 1, 1, 2]), np.array([1, 1, 2, 3, 1, 0]), np.array([0, 0, 1, 1]),
                  ("a", "b"), np.array([True, True, True, False]))
    t = link_totals(g, simple_graph(g))
    assert (t.pages, t.fetched_pages, t.hosts, t.links, t.distinct_links, t.self_links) == (4, 3, 2, 6, 4, 1)
    assert t.avg_out_degree == 2.0 and t.avg_distinct_out_degree == pytest.approx(4 / 3)
    assert t.cross_host_share == pytest.approx(3 / 6)  # 0->2, 1->3, 2->0
    assert t.outside_share == pytest.approx(1 / 6)
    assert t.pages_per_host == 1.5


def _load_reference(rows: list[tuple[str, float]], step: float) -> list[float | None]:
    start = min(t for _, t in rows)
    end = max(t for _, t in rows)
    n_slots = max(1, math.ceil((end - start) / step))
    nodes = sorted({n for n, _ in rows})
    counts = [[0] * len(nodes) for _ in range(n_slots)]
    for node, t in rows:
        counts[min(int((t - start) // step), n_slots - 1)][nodes.index(node)] += 1
    result: list[float | None] = []
    for row in counts:
        total = sum(row)
        shares = [len(nodes) * c / total for c in row] if total else []
        result.append(sum((s - 1) ** 2 for s in shares) / len(nodes) if total else None)
    return result


def test_node_load_variance_matches_reference() -> None:
    rng = random.Random(41)
    rows = [(f"n{rng.randrange(3)}", rng.uniform(0, 7200)) for _ in range(500)]
    rows.append(("n0", 1000.0 + 7200.0 * 3))  # a gap: some intervals empty
    entries = [_entry(f"http://h{i}.test/", t, node=n) for i, (n, t) in enumerate(rows)]
    load = node_load(fetch_table(entries), interval_s=900.0)
    assert load is not None
    expected = _load_reference(rows, 900.0)
    assert len(load.variance) == len(expected)
    for got, want in zip(load.variance, expected):
        assert (got is None and want is None) or got == pytest.approx(want)
    assert None in load.variance
    assert sum(map(sum, load.pages)) == 501 and sum(load.total_per_node) == 501
    assert load.mean_variance == pytest.approx(np.mean([v for v in expected if v is not None]))
    assert sum(load.overall_share) == pytest.approx(3.0)


def test_perfect_balance_has_zero_variance_and_automatic_interval() -> None:
    entries = [_entry(f"http://h{i}.test/", 100.0 + i, node=f"n{i % 2}") for i in range(20)]
    load = node_load(fetch_table(entries))
    assert load is not None and load.interval_s == pytest.approx(1.9)
    assert len(load.pages) == 10 and all(v == 0.0 for v in load.variance)
    assert choose_interval_s(40_000.0) == 3600.0 and choose_interval_s(0.0) == 1.0


def test_node_load_errors_and_empty() -> None:
    assert node_load(fetch_table([])) is None
    with pytest.raises(AnalysisError, match="interval_s"):
        node_load(fetch_table([]), interval_s=-1.0)
    entries = [_entry("http://a.test/", 0.0), _entry("http://a.test/b", 1e9)]
    with pytest.raises(AnalysisError, match="intervals"):
        node_load(fetch_table(entries), interval_s=1.0)
