"""Partition strategies: variance formula, cross traffic, reconfiguration moves."""

from __future__ import annotations

import numpy as np
import pytest

from webgather.errors import AnalysisError, ConfigError
from webgather.sim import partition, reconfig

from .conftest import make_graph


def test_variance_formula_by_hand() -> None:
    var_norm, var_share = partition.load_variance(np.array([0, 0, 0, 1]), 2)
    # shares 0.75, 0.25 -> normalized 1.5, 0.5 -> mean squared deviation from 1 = 0.25
    assert var_norm == pytest.approx(0.25)
    assert var_share == pytest.approx(0.0625)  # variance of (0.75, 0.25)
    assert partition.load_variance(np.array([0, 1, 2, 0, 1, 2]), 3) == (0.0, 0.0)
    # a node with no pages counts: shares (1, 0) -> normalized (2, 0) -> variance 1
    assert partition.load_variance(np.array([0, 0]), 2)[0] == pytest.approx(1.0)


def test_interval_variance_by_hand() -> None:
    ordered = np.array([0, 0, 0, 1, 0, 1, 0, 1])
    per = partition.interval_variance(ordered, 2, 2)
    assert per == pytest.approx([0.25, 0.0])
    with pytest.raises(ConfigError):
        partition.interval_variance(ordered, 2, 0)


def test_cross_traffic_by_hand() -> None:
    src_node = np.array([0, 0, 1, 1, 0])
    dst_node = np.array([1, 1, 0, 1, 0])
    dst_page = np.array([7, 7, 3, 4, 5])
    url_bytes = np.full(8, 10)
    t = partition.cross_traffic(src_node, dst_node, dst_page, url_bytes, 2, batch_urls=2)
    assert (t.cross_links, t.messages, t.bytes, t.unique_cross) == (3, 2, 30, 2)
    assert t.cross_fraction == pytest.approx(0.6)
    assert partition.cross_traffic(src_node, dst_node, dst_page, url_bytes, 2, 1).messages == 3


def _graph(hosts: int = 40, per_host: int = 5) -> object:
    rng = np.random.default_rng(0)
    n = hosts * per_host
    page_host = np.repeat(np.arange(hosts), per_host)
    edges = [(i, int(j)) for i in range(n) for j in rng.integers(0, n, 4)]
    edges += [(i, i + 1) for i in range(n - 1)]
    return make_graph(edges, page_host.tolist())


def test_strategies_assign_every_page_to_a_node_and_host_strategies_keep_hosts_whole() -> None:
    graph = _graph()
    keys = partition.keys_of(graph)
    for strategy in partition.STRATEGIES:
        nodes = partition.assign(keys, strategy, 4)
        assert nodes.shape == (graph.n_pages,) and nodes.min() >= 0 and nodes.max() < 4
        if strategy != "url-hash":
            per_host = {(h, n) for h, n in zip(graph.page_host.tolist(), nodes.tolist())}
            assert len(per_host) == graph.n_hosts
    with pytest.raises(ConfigError):
        partition.assign(keys, "dns", 4)


def test_ip_sum_uses_the_resolve_map() -> None:
    graph = make_graph([(0, 1)], [0, 1])
    keys = partition.keys_of(graph, {"h0.test": "10.0.0.1", "h1.test": "10.0.0.6"})
    assert list(keys.ip_sum) == [11, 16]
    assert list(partition.assign(keys, "ip-sum", 4)) == [3, 0]
    with pytest.raises(AnalysisError):
        partition.keys_of(graph, {"h0.test": "not-an-ip"})


def test_consistent_hashing_join_moves_hosts_only_to_the_new_node() -> None:
    fps = np.random.default_rng(2).integers(0, 2**63, 2000).astype(np.uint64)
    before = partition.ring_owner(fps, 5, 50)
    after = partition.ring_owner(fps, 6, 50)
    moved = before != after
    assert set(after[moved].tolist()) == {5}
    assert 0.05 < moved.mean() < 0.35  # about 1/6


def test_run_reports_every_strategy_and_node_count() -> None:
    graph = _graph()
    result = partition.run(graph, [2, 4], n_intervals=4)
    assert len(result.rows) == 2 * len(partition.STRATEGIES)
    url = next(r for r in result.rows if r.strategy == "url-hash" and r.n == 4)
    host = next(r for r in result.rows if r.strategy == "host-hash" and r.n == 4)
    assert url.cross_fraction > host.cross_fraction  # host partitions keep site links local
    assert result.n_pages == 200
    assert url.expected_var_norm == pytest.approx(3 / 200)  # (n - 1) / pages
    assert host.expected_var_norm == pytest.approx(3 / 40)  # (n - 1) * 40 hosts * (1/40)^2
    assert "two-stage" in partition.table(result)


def test_reconfiguration_moves_by_hand() -> None:
    graph = _graph(hosts=60)
    keys = partition.keys_of(graph)
    rows = {(r.method, r.event): r for r in reconfig.reconfigure(keys, 2, n_buckets=64)}
    # the sites table moves exactly floor(60 / 3) = 20 sites of 5 pages on a join
    assert rows[("sites-table", "join")].urls_moved == 20 * 5
    # a leave of node 1 of 2 moves exactly that node's sites
    owner = (keys.host_fp % np.uint64(2)).astype(np.int64)
    assert rows[("sites-table", "leave")].urls_moved == int((owner == 1).sum()) * 5
    # two-stage: 64 // 3 = 21 buckets move; only their hosts' pages move
    bucket = (keys.host_fp % np.uint64(64)).astype(np.int64)
    from webgather.cluster.mapping import initial, moves, plan_join

    table = initial(["node-000", "node-001"], 64)
    moved_buckets = set(moves(table, plan_join(table, "node-002")))
    assert len(moved_buckets) == 21
    expected = sum(5 for b in bucket.tolist() if b in moved_buckets)
    assert rows[("two-stage", "join")].urls_moved == expected
    assert rows[("two-stage", "join")].table_bytes == 64 * 4
    assert rows[("mod-n", "join")].table_bytes == 0
    assert "mod-n" in reconfig.table(list(rows.values()))
    with pytest.raises(ConfigError):
        reconfig.reconfigure(keys, 1)
