"""webgather.runtime.metrics.node and metrics_export: addresses, the latency histogram, the metric names, the collector."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry
from prometheus_client.exposition import generate_latest

from webgather.config.listen import listen_address
from webgather.errors import ConfigError
from webgather.runtime.metrics import export as metrics_export
from webgather.runtime.metrics.node import ClusterSample, NodeSample, worker_metrics
from webgather.runtime.metrics.export import NodeCollector, families
from webgather.runtime.engine.stats import FETCH_SECONDS_BUCKETS, CrawlStats

METRIC_NAMES = [  # docs/operating.md's list: a new or renamed metric must change it too
    "webgather_node_info", "webgather_pages", "webgather_requisites", "webgather_fetch_attempts", "webgather_fetch_retries",
    "webgather_robots_fetches", "webgather_received_bytes", "webgather_links_found", "webgather_new_urls",
    "webgather_page_status", "webgather_page_errors", "webgather_fetch_duration_seconds",
    "webgather_queued_urls", "webgather_in_flight_urls", "webgather_seen_urls", "webgather_hosts",
    "webgather_hosts_active", "webgather_hosts_ready", "webgather_hosts_waiting", "webgather_hosts_backing_off",
    "webgather_hosts_with_work", "webgather_parked_retries", "webgather_robots_hosts",
    "webgather_buckets_owned", "webgather_cross_messages", "webgather_cross_urls", "webgather_cross_bytes",
    "webgather_cross_cache_saved", "webgather_cross_send_retries", "webgather_cross_batches_received",
    "webgather_handoffs", "webgather_handoff_urls", "webgather_handoff_bytes", "webgather_recoveries",
    "webgather_recovered_buckets", "webgather_recrawl_cycle", "webgather_recrawl_events",
    "webgather_recrawl_archived_bytes",
]


@pytest.mark.parametrize(("text", "expected"), [
    ("9100", ("127.0.0.1", 9100)), ("0", ("127.0.0.1", 0)), ("0.0.0.0:9100", ("0.0.0.0", 9100)),
    (" 127.0.0.2:80 ", ("127.0.0.2", 80)), ("[::1]:9100", ("::1", 9100)), ("[::]:0", ("::", 0)),
    ("65536", None), ("-1", None), ("localhost:9100", None), ("::1:9100", None), ("[127.0.0.1]:80", None),
    ("127.0.0.1:", None), (":9100", None), ("9100:127.0.0.1", None), ("", None), ("٩١٠٠", None),
])
def test_listen_address(text: str, expected: tuple[str, int] | None) -> None:
    assert listen_address(text) == expected


def test_worker_k_listens_on_port_plus_k() -> None:
    assert worker_metrics(None, 3) is None
    assert [worker_metrics("9100", k) for k in range(3)] == ["127.0.0.1:9100", "127.0.0.1:9101", "127.0.0.1:9102"]
    assert worker_metrics("[::1]:9100", 2) == "[::1]:9102"
    assert worker_metrics("0.0.0.0:0", 5) == "0.0.0.0:0"  # each worker picks a free port
    assert worker_metrics("65535", 0) == "127.0.0.1:65535"
    with pytest.raises(ConfigError, match="w1 would need port 65536"):
        worker_metrics("65535", 1)


def test_latency_buckets_count_each_attempt_once_at_its_upper_bound() -> None:
    stats = CrawlStats()
    for elapsed_s in (0.0, 0.005, 0.0051, 1.0, 30.0, 30.5):
        stats.record_attempt(elapsed_s)
    counts = stats.fetch_seconds_counts
    assert stats.attempts == 6 and sum(counts) == 6 and len(counts) == len(FETCH_SECONDS_BUCKETS) + 1
    assert counts[0] == 2 and counts[1] == 1  # le=0.005 holds 0.005 itself; 0.0051 goes to le=0.01
    assert counts[FETCH_SECONDS_BUCKETS.index(1.0)] == 1 and counts[-2] == 1 and counts[-1] == 1
    assert stats.fetch_seconds_sum == pytest.approx(61.5101)


def _sample() -> NodeSample:
    stats = CrawlStats()
    stats.record_attempt(0.02)
    stats.record_attempt(3.0)
    return NodeSample(
        node="w1", counters={"pages": 2, "requisites": 3, "attempts": 2, "retries": 0, "robots_fetches": 1, "bytes_received": 900,
                             "links_found": 7, "urls_new": 5},
        status={200: 1, 404: 1}, errors={"robots": 3}, fetch_seconds_counts=tuple(stats.fetch_seconds_counts),
        fetch_seconds_sum=stats.fetch_seconds_sum,
        frontier={"queued": 4, "in_flight": 1, "seen": 9, "hosts_total": 3, "hosts_active": 1, "hosts_ready": 1,
                  "hosts_waiting": 1, "hosts_backed_off": 1},
        parked=1, robots={"allowed": 2, "dead": 0, "expired": 0, "fetching": 1, "waiting": 0},
        cluster=ClusterSample(17, {"messages": 3, "urls": 40, "bytes": 1200, "cache_saved": 6, "send_retries": 0},
                              Counter(handoffs_in=1, handoffs_merged=1, handoffs_out=2, batches=5),
                              {"recovered": 1, "skipped": 0, "unrecoverable": 0}, 8),
        recrawl_cycle=2, recrawl={"fetches": 5, "revisits": 4, "not_modified": 3, "bytes_archived": 1000},
    )


def _scrape(collector: NodeCollector) -> dict[str, float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {s.name + str(sorted(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_metric_names_follow_the_conventions_and_the_readme_list() -> None:
    found = families(_sample())
    assert [f.name for f in found] == METRIC_NAMES
    for family in found:
        assert family.type in ("counter", "gauge", "histogram") and family.documentation
        for sample in family.samples:
            assert sample.name.startswith("webgather_")
            assert sample.name.endswith("_total") == (family.type == "counter")


def test_a_sample_becomes_the_values_it_holds() -> None:
    loop = asyncio.new_event_loop()
    try:
        got = _scrape(NodeCollector(loop, _sample))  # made and called on this thread: the sample is taken here
    finally:
        loop.close()
    assert got["webgather_pages_total[]"] == 2 and got["webgather_received_bytes_total[]"] == 900
    assert got["webgather_page_status_total[('status', '404')]"] == 1
    assert got["webgather_page_errors_total[('kind', 'robots')]"] == 3
    assert got["webgather_fetch_duration_seconds_bucket[('le', '0.025')]"] == 1
    assert got["webgather_fetch_duration_seconds_bucket[('le', '5.0')]"] == 2
    assert got["webgather_fetch_duration_seconds_count[]"] == 2
    assert got["webgather_hosts_with_work[]"] == 2 and got["webgather_parked_retries[]"] == 1
    assert got["webgather_robots_hosts[('state', 'fetching')]"] == 1
    assert got["webgather_buckets_owned[]"] == 17 and got["webgather_cross_bytes_total[]"] == 1200
    assert got["webgather_handoffs_total[('direction', 'in')]"] == 2
    assert got["webgather_handoffs_total[('direction', 'out')]"] == 2
    assert got["webgather_recoveries_total[('outcome', 'recovered')]"] == 1
    assert got["webgather_recovered_buckets_total[]"] == 8
    assert got["webgather_recrawl_cycle[]"] == 2
    assert got["webgather_recrawl_events_total[('event', 'not_modified')]"] == 3
    assert got["webgather_recrawl_archived_bytes_total[]"] == 1000


async def test_a_scrape_from_another_thread_takes_its_sample_on_the_loop() -> None:
    threads: list[int] = []

    def sampler() -> NodeSample:
        threads.append(threading.get_ident())
        return _sample()

    collector = NodeCollector(asyncio.get_running_loop(), sampler)
    got = await asyncio.to_thread(_scrape, collector)
    assert got["webgather_pages_total[]"] == 2 and threads == [threading.get_ident()]


async def test_a_loop_that_does_not_answer_gives_a_scrape_without_node_figures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_export, "SAMPLE_TIMEOUT_S", 0.05)
    collector = NodeCollector(asyncio.get_running_loop(), _sample)
    scraping = asyncio.create_task(asyncio.to_thread(_scrape, collector))
    await asyncio.sleep(0)  # let the thread start, then block the loop past the timeout
    import time

    time.sleep(0.3)
    assert await scraping == {}
