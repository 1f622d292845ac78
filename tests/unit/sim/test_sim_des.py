"""The discrete-event crawl simulation on graphs small enough to compute by hand."""

from __future__ import annotations

import numpy as np
import pytest

from webgather.errors import AnalysisError, ConfigError
from webgather.sim import crawl
from webgather.sim.des import CrawlParams, page_costs, simulate
from webgather.sim.traces import bfs_order

from .conftest import make_graph

PARAMS = CrawlParams(politeness_s=0.5, cpu_s_per_page=0.1, cpu_s_per_cross_url=0.0,
                     batch_urls=100, batch_delay_s=0.25, lan_latency_s=0.01)


def test_two_pages_one_host_one_node() -> None:
    graph = make_graph([(0, 1)], [0, 0])
    run = simulate(graph, np.array([0]), np.array([0]), PARAMS, np.array([1.0, 2.0]))
    # page 0: 0 -> 1.0; parsed at 1.1; host free again at 1.0 + 0.5; page 1: 1.5 -> 3.5
    assert run.fetch_time.tolist() == pytest.approx([1.0, 3.5])
    assert run.fetch_page.tolist() == [0, 1]
    assert (run.messages, run.cross_urls) == (0, 0)
    assert run.busy_slot_s.tolist() == pytest.approx([3.0])
    assert run.cpu_busy_s.tolist() == pytest.approx([0.2])


def test_two_pages_two_hosts_two_nodes_batch_by_timeout() -> None:
    graph = make_graph([(0, 1)], [0, 1])
    run = simulate(graph, np.array([0, 1]), np.array([0]), PARAMS, np.array([1.0, 2.0]))
    # page 0 parsed at 1.1 on node 0; the cross URL waits T = 0.25 (batch not full),
    # arrives at node 1 at 1.36 and is fetched at once (its host was never fetched)
    assert run.fetch_time.tolist() == pytest.approx([1.0, 3.36])
    assert run.fetch_node.tolist() == [0, 1]
    assert (run.messages, run.cross_urls) == (1, 1)


def test_full_batch_goes_at_once_and_seen_test_drops_duplicates() -> None:
    graph = make_graph([(0, 1), (0, 1), (0, 2)], [0, 1, 1])
    params = CrawlParams(politeness_s=0.0, cpu_s_per_page=0.0, cpu_s_per_cross_url=0.0,
                         batch_urls=3, batch_delay_s=100.0, lan_latency_s=0.0)
    run = simulate(graph, np.array([0, 1]), np.array([0]), params, np.array([1.0, 1.0, 1.0]))
    assert run.messages == 1 and run.cross_urls == 3  # one full batch, no waiting
    assert sorted(run.fetch_page.tolist()) == [0, 1, 2]  # page 1 fetched once
    assert run.fetch_time.tolist() == pytest.approx([1.0, 2.0, 3.0])  # one host: 1 then 2


def test_concurrency_and_politeness_limits() -> None:
    # four hosts with two pages each, all seeded: 2 slots, so 4 fetches in 2 waves
    graph = make_graph([], [0, 0, 1, 1, 2, 2, 3, 3])
    params = CrawlParams(concurrency=2, politeness_s=10.0, cpu_s_per_page=0.0)
    run = simulate(graph, np.zeros(4, dtype=np.int64), np.arange(8), params, np.ones(8))
    times = run.fetch_time.tolist()
    assert times[:4] == pytest.approx([1.0, 1.0, 2.0, 2.0])
    # second pages wait for their host's politeness gap: hosts 0, 1 free at 1 + 10,
    # hosts 2, 3 at 2 + 10
    assert times[4:] == pytest.approx([12.0, 12.0, 13.0, 13.0])


def test_max_time_stops_the_crawl() -> None:
    graph = make_graph([(0, 1)], [0, 0])
    params = CrawlParams(politeness_s=0.5, cpu_s_per_page=0.1, max_time_s=2.0)
    run = simulate(graph, np.array([0]), np.array([0]), params, np.array([1.0, 2.0]))
    assert run.fetch_time.tolist() == [1.0] and run.end_time == 2.0


def test_bad_inputs() -> None:
    graph = make_graph([(0, 1)], [0, 0])
    with pytest.raises(AnalysisError):
        simulate(graph, np.array([0, 1]), np.array([0]), PARAMS, np.ones(2))
    with pytest.raises(ConfigError):
        CrawlParams(concurrency=0)
    with pytest.raises(ConfigError):
        CrawlParams(politeness_s=-1.0)


def test_page_costs_are_seeded_and_positive() -> None:
    graph = make_graph([(0, 1)], [0] * 50)
    a = page_costs(graph, CrawlParams(), np.random.default_rng(4))
    b = page_costs(graph, CrawlParams(), np.random.default_rng(4))
    assert np.array_equal(a, b) and a.min() > 0


def test_speedup_experiment_on_a_small_web() -> None:
    rng = np.random.default_rng(0)
    hosts, per = 40, 10
    n = hosts * per
    edges = [(i, int(j)) for i in range(n) for j in rng.integers(0, n, 5)]
    params = CrawlParams(concurrency=2, politeness_s=0.5)
    graph = make_graph(edges, np.repeat(np.arange(hosts), per).tolist())
    result = crawl.run(graph, [1, 2, 4], params, seeds=[0])
    costs = page_costs(graph, params, np.random.default_rng(0))  # run() draws with seed 0 too
    reached = bfs_order(graph, [0])
    assert result.reachable == reached.size
    assert all(curve.size == reached.size for curve in result.curves.values())
    mean = costs[reached].mean()
    assert result.node_pages_per_s == pytest.approx(2 / mean)
    reached_hosts = np.unique(graph.page_host[reached]).size
    assert result.politeness_pages_per_s == pytest.approx(reached_hosts / (0.5 + mean))
    rows = {r.n: r for r in result.rows}
    assert rows[1].speedup == 1.0
    assert rows[4].pages_at_horizon > rows[1].pages_at_horizon
    assert rows[1].msgs_per_page == 0 and rows[4].msgs_per_page > 0
    assert result.host_bound_s > 0
    assert "speedup@T" in crawl.table(result)
