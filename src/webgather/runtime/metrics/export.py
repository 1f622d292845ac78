"""A :class:`~webgather.runtime.metrics.node.NodeSample` as Prometheus metric families, and the HTTP server.

:func:`families` is pure (sample in, families out). :class:`NodeCollector` is the
registry's collector: at each scrape (on a server thread) it has the event loop take a
sample and waits for it at most ``SAMPLE_TIMEOUT_S`` (a loop blocked that long gives a
scrape without webgather metrics, and a log line, rather than a hung scrape).
:class:`MetricsServer` is ``prometheus_client``'s HTTP server on the node's own registry.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

from webgather.errors import ConfigError
from webgather.runtime.engine.stats import FETCH_SECONDS_BUCKETS

if TYPE_CHECKING:  # types only: runtime.metrics.node imports this module when a node serves metrics
    from webgather.runtime.metrics.node import ClusterSample, NodeSample

__all__ = ["SAMPLE_TIMEOUT_S", "MetricsServer", "NodeCollector", "families"]

_log = logging.getLogger(__name__)

SAMPLE_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0
P = "webgather_"

_COUNTERS = (  # (CrawlStats counter, metric name without _total, help)
    ("pages", "pages", "Pages (and sitemaps) whose final fetch attempt completed: the crawl's fetched set."),
    ("requisites", "requisites", "Page requisites (images, stylesheets, scripts) whose final fetch attempt completed."),
    ("attempts", "fetch_attempts", "Page fetch attempts, retries included."),
    ("retries", "fetch_retries", "Fetch attempts that failed transiently and were retried later."),
    ("robots_fetches", "robots_fetches", "robots.txt requests."),
    ("bytes_received", "received_bytes", "Body bytes received for pages."),
    ("links_found", "links_found", "Links found in parsed pages."),
    ("urls_new", "new_urls", "URLs new to this node's seen-test."),
)
_FRONTIER_GAUGES = (  # (frontier.stats() key, metric name, help)
    ("queued", "queued_urls", "URLs queued in the frontier."),
    ("in_flight", "in_flight_urls", "URLs taken from the frontier and not completed (parked retries included)."),
    ("seen", "seen_urls", "URLs in the seen-set."),
    ("hosts_total", "hosts", "Hosts the frontier knows."),
    ("hosts_active", "hosts_active", "Hosts with a request under way."),
    ("hosts_ready", "hosts_ready", "Hosts with queued URLs that may be fetched now."),
    ("hosts_waiting", "hosts_waiting", "Hosts with queued URLs waiting for their politeness delay or a connection."),
    ("hosts_backed_off", "hosts_backing_off", "Hosts with queued URLs backing off after errors."),
)


def families(sample: NodeSample) -> list[Metric]:
    """Every metric of the sample (names: ``webgather_`` prefix, ``_total`` counters, units in names)."""
    info = GaugeMetricFamily(P + "node_info", "This node's id (always 1).", labels=["node"])
    info.add_metric([sample.node], 1)
    out: list[Metric] = [info, *_crawl_families(sample), _latency(sample), *_frontier_families(sample)]
    if sample.cluster is not None:
        out.extend(_cluster_families(sample.cluster))
    if sample.recrawl_cycle is not None:
        out.extend(_recrawl_families(sample.recrawl_cycle, sample.recrawl))
    return out


def _crawl_families(sample: NodeSample) -> Iterator[Metric]:
    for key, name, text in _COUNTERS:
        yield CounterMetricFamily(P + name, text, value=sample.counters[key])
    yield _labelled(CounterMetricFamily(P + "page_status", "Pages by HTTP status of their final attempt.",
                                        labels=["status"]), {str(k): v for k, v in sorted(sample.status.items())})
    yield _labelled(CounterMetricFamily(P + "page_errors", "URLs that ended with this crawl-log error kind "
                                        "(robots denials included).", labels=["kind"]),
                    dict(sorted(sample.errors.items())))


def _latency(sample: NodeSample) -> Metric:
    cumulative, running = [], 0
    for bound, count in zip([*map(str, FETCH_SECONDS_BUCKETS), "+Inf"], sample.fetch_seconds_counts, strict=True):
        running += count
        cumulative.append((bound, float(running)))
    return HistogramMetricFamily(P + "fetch_duration_seconds", "Seconds a page fetch attempt took.",
                                 buckets=cumulative, sum_value=sample.fetch_seconds_sum)


def _frontier_families(sample: NodeSample) -> Iterator[Metric]:
    frontier = sample.frontier
    for key, name, text in _FRONTIER_GAUGES:
        yield GaugeMetricFamily(P + name, text, value=frontier.get(key, 0))
    yield GaugeMetricFamily(P + "hosts_with_work", "Hosts with queued URLs.",
                            value=frontier.get("hosts_ready", 0) + frontier.get("hosts_waiting", 0))
    yield GaugeMetricFamily(P + "parked_retries", "Retries waiting for their time apart from their host's queue.",
                            value=sample.parked)
    yield _labelled(GaugeMetricFamily(P + "robots_hosts", "Hosts by robots.txt state.", labels=["state"]),
                    sample.robots)


def _cluster_families(cluster: ClusterSample) -> Iterator[Metric]:
    cross, buckets = cluster.cross, cluster.buckets
    yield GaugeMetricFamily(P + "buckets_owned", "Buckets this node owns and crawls.", value=cluster.buckets_owned)
    for key, name, text in (("messages", "cross_messages", "Cross-URL batches sent to other nodes' buckets."),
                            ("urls", "cross_urls", "Cross URLs sent."),
                            ("bytes", "cross_bytes", "Payload bytes of the cross-URL batches sent."),
                            ("cache_saved", "cross_cache_saved", "Cross URLs not sent: the sent-URL cache had them."),
                            ("send_retries", "cross_send_retries", "Cross-URL batch sends retried.")):
        yield CounterMetricFamily(P + name, text, value=cross.get(key, 0))
    yield CounterMetricFamily(P + "cross_batches_received", "Cross-URL batches received for owned buckets.",
                              value=buckets.get("batches", 0))
    yield _labelled(CounterMetricFamily(P + "handoffs", "Bucket hand-offs sent (out) and received (in, merges "
                                        "included).", labels=["direction"]),
                    {"in": buckets.get("handoffs_in", 0) + buckets.get("handoffs_merged", 0),
                     "out": buckets.get("handoffs_out", 0)})
    yield CounterMetricFamily(P + "handoff_urls", "Queued URLs sent in hand-offs.",
                              value=buckets.get("handoff_items", 0))
    yield CounterMetricFamily(P + "handoff_bytes", "Bytes of the hand-offs sent.",
                              value=buckets.get("handoff_bytes", 0))
    yield _labelled(CounterMetricFamily(P + "recoveries", "Recoveries of a dead node's buckets run by this node, "
                                        "by outcome.", labels=["outcome"]), cluster.recoveries)
    yield CounterMetricFamily(P + "recovered_buckets", "Buckets recovered from dead nodes by this node.",
                              value=cluster.recovered_buckets)


def _recrawl_families(cycle: int, counts: Mapping[str, int]) -> Iterator[Metric]:
    yield GaugeMetricFamily(P + "recrawl_cycle", "The re-crawl cycle this node runs.", value=cycle)
    events = {k: v for k, v in sorted(counts.items()) if k != "bytes_archived"}
    yield _labelled(CounterMetricFamily(P + "recrawl_events", "This cycle's re-crawl counters (fetches, revisits, "
                                        "not_modified, changed, died...); they restart with each cycle.",
                                        labels=["event"]), events)
    yield CounterMetricFamily(P + "recrawl_archived_bytes", "Payload bytes archived in full this cycle.",
                              value=counts.get("bytes_archived", 0))


def _labelled(family: CounterMetricFamily | GaugeMetricFamily, values: Mapping[str, int]) -> Metric:
    for label, value in values.items():
        family.add_metric([label], value)
    return family


class NodeCollector(Collector):
    """The registry's view of one node: a sample taken on the event loop at each scrape."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sampler: Callable[[], NodeSample]) -> None:
        self._loop = loop
        self._sampler = sampler
        self._loop_thread = threading.get_ident()

    def collect(self) -> Iterable[Metric]:
        sample = self._sampler() if threading.get_ident() == self._loop_thread else self._from_loop()
        return families(sample) if sample is not None else []

    def _from_loop(self) -> NodeSample | None:
        future: concurrent.futures.Future[NodeSample] = concurrent.futures.Future()

        def take() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(self._sampler())
                except Exception as exc:  # a bug: this scrape goes without, the next one tries again
                    future.set_exception(exc)

        try:
            self._loop.call_soon_threadsafe(take)
            return future.result(timeout=SAMPLE_TIMEOUT_S)
        except RuntimeError:  # the loop is closed: the run is over
            return None
        except concurrent.futures.TimeoutError:
            future.cancel()
            _log.warning("metrics: the event loop did not answer within %.0f s; scrape without node figures",
                         SAMPLE_TIMEOUT_S)
            return None
        except Exception:
            _log.exception("metrics: taking a sample failed")
            return None


class MetricsServer:
    """``prometheus_client``'s HTTP server over one node's registry (its collector and process metrics)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        host, port = httpd.server_address[:2]
        self.host, self.port = str(host), int(port)
        self.url_host = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        thread.name = f"webgather-metrics-{self.port}"

    @classmethod
    def start(cls, address: tuple[str, int], sampler: Callable[[], NodeSample]) -> MetricsServer:
        """Listen on ``address`` now (on the event loop's thread: the collector asks that loop)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(NodeCollector(asyncio.get_running_loop(), sampler))
        ProcessCollector(registry=registry)
        host, port = address
        try:
            httpd, thread = start_http_server(port, host, registry)
        except OSError as exc:
            raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
        return cls(httpd, thread)

    async def stop(self) -> None:
        """Stop serving, close the socket and join the thread (off the loop: a scrape under way
        needs the loop to take its sample)."""
        await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(STOP_TIMEOUT_S)
