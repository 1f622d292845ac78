"""Discrete-event simulation of a distributed crawl over a link graph. Pure.

The model (every knob is a :class:`CrawlParams` field):

* ``n`` nodes; each host belongs to one node (``host_node``: any coordinator-free
  partition, e.g. the two-stage mapping). A node owns the seen-test, host queues
  and politeness state of its hosts.
* A node runs ``concurrency`` fetch slots ("gatherers"). A fetch of page p takes
  ``latency[p] + rtt_factor * rtt[node, host] + bytes[p] / (bandwidth / concurrency)``:
  server latency is lognormal, page size lognormal with the documents' 12.92 KB mean,
  each slot gets a fixed share of the node's bandwidth. Page costs are drawn once
  per page from the seeded generator, so runs with different ``n`` fetch the same
  pages at the same costs (common random numbers).
* One request at a time per host, and ``politeness_s`` from the end of one fetch to
  the start of the next on that host.
* After a fetch, the node's CPU (one server, FIFO) spends ``cpu_s_per_page`` to parse
  and store it; then its links are routed: links to the node's own hosts go to its
  seen-test at once; others are buffered per destination node and sent when
  ``batch_urls`` are waiting or ``batch_delay_s`` after the first one, whichever is
  first, arriving ``lan_latency_s`` later; the receiver's CPU spends
  ``cpu_s_per_cross_url`` per URL before its seen-test sees them.
* Seeds go to their owners at time 0. The crawl ends when nothing is queued or in
  flight, or at ``max_time_s``.

Events are ``(time, seq, kind, a, b)`` tuples on a heap; per page the work is a few
heap operations and a few numpy slices (out-links, owners).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from webgather.errors import AnalysisError, ConfigError
from webgather.linkgraph import LinkGraph
from webgather.sim.traces import Adjacency, adjacency

__all__ = ["CrawlParams", "CrawlRun", "simulate"]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
_DONE, _PARSED, _FLUSH, _ARRIVE, _ADMIT, _WAKE = range(6)


@dataclass(frozen=True)
class CrawlParams:
    concurrency: int = 16
    """Fetch slots (gatherers) per node."""
    bandwidth_bytes_per_s: float = 1_000_000.0
    """Download bandwidth per node, split evenly over its slots."""
    politeness_s: float = 2.0
    """Gap between the end of one fetch from a host and the start of the next."""
    latency_median_s: float = 0.25
    latency_sigma: float = 0.8
    """Server latency per page: lognormal with this median and log-sd."""
    page_bytes_mean: float = 12_920.0
    page_bytes_sigma: float = 1.0
    """Page size: lognormal with this mean (documents: 12.92 KB) and log-sd."""
    cpu_s_per_page: float = 0.004
    """Node CPU time to parse and store one page."""
    cpu_s_per_cross_url: float = 0.0001
    """Node CPU time to receive one cross URL (decode + seen-test)."""
    batch_urls: int = 100
    """R: a cross-URL batch is sent when this many URLs wait for one destination..."""
    batch_delay_s: float = 1.0
    """T: ...or this long after the first of them, whichever comes first."""
    lan_latency_s: float = 0.001
    rtt_factor: float = 3.0
    """Round trips per fetch charged from an RTT matrix (connect, request, slow start)."""
    max_time_s: float = math.inf

    def __post_init__(self) -> None:
        if self.concurrency < 1 or self.batch_urls < 1:
            raise ConfigError("concurrency and batch_urls must be >= 1")
        if min(self.bandwidth_bytes_per_s, self.page_bytes_mean, self.latency_median_s) <= 0:
            raise ConfigError("bandwidth, page size and latency must be > 0")
        if min(self.politeness_s, self.cpu_s_per_page, self.cpu_s_per_cross_url,
               self.batch_delay_s, self.lan_latency_s, self.rtt_factor) < 0:
            raise ConfigError("delays and costs must be >= 0")


@dataclass(frozen=True)
class CrawlRun:
    n_nodes: int
    fetch_time: FloatArray
    """Completion time of each fetch, ascending."""
    fetch_node: IntArray
    fetch_page: IntArray
    busy_slot_s: FloatArray
    """Per node: total slot time spent fetching."""
    cpu_busy_s: FloatArray
    messages: int
    cross_urls: int
    end_time: float


@dataclass
class _Sim:
    graph: LinkGraph
    adj: Adjacency
    host_node: IntArray
    page_host: IntArray
    duration: FloatArray
    """Fetch duration of each page at its owner."""
    p: CrawlParams
    n: int
    seen: NDArray[np.bool_] = field(init=False)
    events: list[tuple[float, int, int, int, int | list[int] | None]] = field(default_factory=list)
    seq: int = 0
    queues: dict[int, deque[int]] = field(default_factory=dict)
    host_ok: dict[int, float] = field(default_factory=dict)
    host_waiting: set[int] = field(default_factory=set)
    """Hosts that are in a ready heap or being fetched (not to be pushed again)."""
    ready: list[list[tuple[float, int]]] = field(default_factory=list)
    free: list[int] = field(default_factory=list)
    wake_at: list[float] = field(default_factory=list)
    cpu_free: list[float] = field(default_factory=list)
    cpu_busy: list[float] = field(default_factory=list)
    buffers: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    generation: dict[tuple[int, int], int] = field(default_factory=dict)
    log: list[tuple[float, int, int]] = field(default_factory=list)
    busy_slot: list[float] = field(default_factory=list)
    messages: int = 0
    cross_urls: int = 0

    def __post_init__(self) -> None:
        self.seen = np.zeros(self.graph.n_pages, dtype=bool)
        self.ready = [[] for _ in range(self.n)]
        self.free = [self.p.concurrency] * self.n
        self.wake_at = [math.inf] * self.n
        self.cpu_free = [0.0] * self.n
        self.cpu_busy = [0.0] * self.n
        self.busy_slot = [0.0] * self.n

    def push(self, t: float, kind: int, a: int, b: int | list[int] | None) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, a, b))

    def cpu(self, node: int, t: float, cost: float) -> float:
        done = max(t, self.cpu_free[node]) + cost
        self.cpu_free[node] = done
        self.cpu_busy[node] += cost
        return done

    def admit(self, node: int, pages: list[int], t: float) -> None:
        seen, page_host = self.seen, self.page_host
        for page in pages:
            if seen[page]:
                continue
            seen[page] = True
            host = int(page_host[page])
            queue = self.queues.get(host)
            if queue is None:
                queue = self.queues[host] = deque()
            queue.append(page)
            if host not in self.host_waiting:
                self.host_waiting.add(host)
                heapq.heappush(self.ready[node], (self.host_ok.get(host, 0.0), host))
        self.dispatch(node, t)

    def dispatch(self, node: int, t: float) -> None:
        ready = self.ready[node]
        while self.free[node] and ready and ready[0][0] <= t:
            _, host = heapq.heappop(ready)
            page = self.queues[host].popleft()
            self.free[node] -= 1
            self.busy_slot[node] += self.duration[page]
            self.push(t + float(self.duration[page]), _DONE, node, page)
        if self.free[node] and ready and ready[0][0] < self.wake_at[node]:
            self.wake_at[node] = ready[0][0]
            self.push(ready[0][0], _WAKE, node, None)

    def on_done(self, node: int, page: int, t: float) -> None:
        self.log.append((t, node, page))
        self.free[node] += 1
        host = int(self.page_host[page])
        self.host_ok[host] = t + self.p.politeness_s
        if self.queues[host]:
            heapq.heappush(self.ready[node], (self.host_ok[host], host))
        else:
            self.host_waiting.discard(host)
        self.push(self.cpu(node, t, self.p.cpu_s_per_page), _PARSED, node, page)
        self.dispatch(node, t)

    def on_parsed(self, node: int, page: int, t: float) -> None:
        if not self.graph.fetched[page]:
            return
        lo, hi = self.adj.indptr[page], self.adj.indptr[page + 1]
        links = self.adj.indices[lo:hi]
        if links.size == 0:
            return
        owners = self.host_node[self.page_host[links]]
        if self.n == 1:
            self.admit(node, links.tolist(), t)
            return
        mine = owners == node
        if mine.any():
            self.admit(node, links[mine].tolist(), t)
        for dst, url in zip(owners[~mine].tolist(), links[~mine].tolist(), strict=True):
            self.buffer(node, dst, url, t)

    def buffer(self, src: int, dst: int, url: int, t: float) -> None:
        key = (src, dst)
        buf = self.buffers.setdefault(key, [])
        buf.append(url)
        if len(buf) >= self.p.batch_urls:
            self.send(key, t)
        elif len(buf) == 1:
            self.push(t + self.p.batch_delay_s, _FLUSH, src * self.n + dst, self.generation.get(key, 0))

    def send(self, key: tuple[int, int], t: float) -> None:
        batch = self.buffers.pop(key, [])
        self.generation[key] = self.generation.get(key, 0) + 1
        if batch:
            self.messages += 1
            self.cross_urls += len(batch)
            self.push(t + self.p.lan_latency_s, _ARRIVE, key[1], batch)

    def step(self, t: float, kind: int, a: int, b: int | list[int] | None) -> None:
        if kind == _DONE:
            assert isinstance(b, int)
            self.on_done(a, b, t)
        elif kind == _PARSED:
            assert isinstance(b, int)
            self.on_parsed(a, b, t)
        elif kind == _FLUSH:
            key = divmod(a, self.n)
            if self.generation.get(key, 0) == b:
                self.send(key, t)
        elif kind == _ARRIVE:
            assert isinstance(b, list)
            done = self.cpu(a, t, self.p.cpu_s_per_cross_url * len(b))
            self.push(done, _ADMIT, a, b)
        elif kind == _ADMIT:
            assert isinstance(b, list)
            self.admit(a, b, t)
        else:  # _WAKE
            self.wake_at[a] = math.inf
            self.dispatch(a, t)


def page_costs(graph: LinkGraph, p: CrawlParams, rng: np.random.Generator) -> FloatArray:
    """Server latency plus transfer time of every page at one slot's bandwidth share."""
    n = graph.n_pages
    latency = p.latency_median_s * np.exp(p.latency_sigma * rng.standard_normal(n))
    mu = math.log(p.page_bytes_mean) - 0.5 * p.page_bytes_sigma**2
    size = np.exp(mu + p.page_bytes_sigma * rng.standard_normal(n))
    return np.asarray(latency + size * p.concurrency / p.bandwidth_bytes_per_s, dtype=np.float64)


def simulate(graph: LinkGraph, host_node: IntArray, seeds: IntArray, params: CrawlParams,
             costs: FloatArray, rtt_s: FloatArray | None = None,
             adj: Adjacency | None = None) -> CrawlRun:
    """Run the crawl. ``costs`` from :func:`page_costs`; ``rtt_s[node, host]`` optional."""
    host_node = np.asarray(host_node, dtype=np.int64)
    if host_node.shape != (graph.n_hosts,) or (host_node.size and host_node.min() < 0):
        raise AnalysisError("host_node must give a node >= 0 for every host")
    n = int(host_node.max()) + 1 if host_node.size else 1
    page_host = np.asarray(graph.page_host, dtype=np.int64)
    duration = np.asarray(costs, dtype=np.float64)
    if rtt_s is not None:
        rtt = np.asarray(rtt_s, dtype=np.float64)
        if rtt.shape[0] < n or rtt.shape[1] != graph.n_hosts:
            raise AnalysisError(f"rtt_s must be (nodes, hosts), got {rtt.shape}")
        duration = duration + params.rtt_factor * rtt[host_node[page_host], page_host]
    sim = _Sim(graph, adj or adjacency(graph), host_node, page_host, duration, params, n)
    for node in range(n):
        mine = [int(s) for s in seeds if host_node[page_host[s]] == node]
        sim.admit(node, mine, 0.0)
    t = 0.0
    while sim.events:
        t, _, kind, a, b = heapq.heappop(sim.events)
        if t > params.max_time_s:
            t = params.max_time_s
            break
        sim.step(t, kind, a, b)
    log = np.array(sim.log, dtype=np.float64).reshape(-1, 3)
    return CrawlRun(n, log[:, 0], log[:, 1].astype(np.int64), log[:, 2].astype(np.int64),
                    np.array(sim.busy_slot), np.array(sim.cpu_busy), sim.messages,
                    sim.cross_urls, t)
