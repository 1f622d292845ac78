"""GNP on a synthetic wide-area latency model: accuracy, and Random/Top1/Top3 assignment. Pure.

The world (:func:`make_world`): crawlers sit in ``n_cities`` cities and sites in
``n_site_cities`` cities (the crawler cities first), cities placed uniformly in a
square of ``plane_km``; each host is scattered ``city_radius_km`` around its city
and has its own access-link delay (last mile, 1..``access_ms_max`` ms) that no
coordinate space can express (so GNP is not exact here, as on the real net).
``RTT = access_a + access_b + 2 * route_inflation * distance / 200 km/ms``.

httpping (:func:`httpping`): ``samples`` measurements per pair, each the RTT times
a 5 % jitter plus exponential queueing delay (mean ``queue_ms``), and with
probability ``outlier_p`` a spike of 50..300 ms (a retransmit); the documents'
filter (:func:`webgather.gnp.filter_samples`, modulus ``modulus_ms``) turns them
into one estimate.

Accuracy (:func:`accuracy`): ``L`` landmarks are crawlers picked by farthest-point
sampling (spread over the cities); GNP fits them in ``d`` dimensions from their
filtered pairwise httpping, places every other crawler and every site from its
filtered httpping to the landmarks, then predicts every crawler-site RTT. A
prediction is *within tolerance* when ``|predicted - true| / true <= tol``; the
cell is the fraction within tolerance. The documents do not state their tolerance;
we use ``tol = 0.2`` unless told.

Throughput (:func:`throughput`): sites are assigned to crawlers by ``random``
(uniform), ``top1`` (the GNP-nearest crawler) or ``top3`` (one of the 3 nearest, at
random), then the crawl is simulated (:mod:`webgather.sim.des`, seeded with every
site's front page: the study knew its 203 sites) with the true RTTs
added to each fetch (``rtt_factor`` round trips) and a per-crawler capacity
(``concurrency`` slots, bandwidth). ``gain@T = pages_by_T / pages_by_T(random) - 1``
with T the time the random assignment needs to fetch half the pages;
``gain_total`` compares the times to fetch everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from webgather import gnp
from webgather.errors import ConfigError
from webgather.linkgraph import LinkGraph
from webgather.sim.des import CrawlParams, page_costs, simulate
from webgather.sim.tables import render
from webgather.sim.traces import adjacency, default_seeds

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "DOC_GAIN",
    "ASSIGNMENTS",
    "DEFAULT_PARAMS",
    "ThroughputRow",
    "World",
    "accuracy",
    "accuracy_table",
    "assign_sites",
    "farthest_landmarks",
    "httpping",
    "make_world",
    "plot",
    "throughput",
    "throughput_table",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
ASSIGNMENTS = ("random", "top1", "top3")
DOC_GAIN = {"random": 0.0, "top1": 0.220, "top3": 0.361}
"""The study's throughput gains over random assignment (30 crawlers, 4 cities, 203 sites)."""
FIBRE_KM_PER_MS = 200.0
DEFAULT_PARAMS = CrawlParams(concurrency=16, politeness_s=0.1, latency_median_s=0.05,
                             bandwidth_bytes_per_s=10_000_000.0)
"""Crawlers with ample slots and bandwidth, short politeness: RTT-bound fetches."""


@dataclass(frozen=True)
class World:
    crawler_xy: FloatArray
    site_xy: FloatArray
    crawler_access_ms: FloatArray
    site_access_ms: FloatArray
    route_inflation: float

    def rtt_ms(self, a_xy: FloatArray, a_acc: FloatArray, b_xy: FloatArray,
               b_acc: FloatArray) -> FloatArray:
        """True RTT between every a and every b, in ms."""
        dist = np.sqrt(((a_xy[:, None, :] - b_xy[None, :, :]) ** 2).sum(axis=2))
        prop = 2.0 * self.route_inflation * dist / FIBRE_KM_PER_MS
        return np.asarray(a_acc[:, None] + b_acc[None, :] + prop, dtype=np.float64)

    def crawler_crawler(self) -> FloatArray:
        c = self.rtt_ms(self.crawler_xy, self.crawler_access_ms, self.crawler_xy, self.crawler_access_ms)
        np.fill_diagonal(c, 0.0)
        return c

    def crawler_site(self) -> FloatArray:
        return self.rtt_ms(self.crawler_xy, self.crawler_access_ms, self.site_xy, self.site_access_ms)


def make_world(rng: np.random.Generator, n_crawlers: int = 30, n_sites: int = 203,
               n_cities: int = 4, n_site_cities: int = 8, plane_km: float = 2000.0,
               city_radius_km: float = 20.0, access_ms_max: float = 10.0,
               route_inflation: float = 1.8) -> World:
    """Crawlers spread evenly over ``n_cities``; sites over ``n_site_cities`` (uneven sizes)."""
    if min(n_crawlers, n_sites, n_cities) < 1 or n_site_cities < n_cities:
        raise ConfigError("need >= 1 crawler, site and city, and n_site_cities >= n_cities")
    cities = rng.uniform(0.0, plane_km, (n_site_cities, 2))
    crawler_city = np.arange(n_crawlers) % n_cities
    weights = rng.pareto(1.5, n_site_cities) + 1.0
    site_city = rng.choice(n_site_cities, n_sites, p=weights / weights.sum())

    def scatter(city: IntArray) -> FloatArray:
        return np.asarray(cities[city] + rng.normal(0.0, city_radius_km, (city.size, 2)))

    return World(scatter(crawler_city), scatter(site_city),
                 rng.uniform(1.0, access_ms_max, n_crawlers), rng.uniform(1.0, access_ms_max, n_sites),
                 route_inflation)


def httpping(true_ms: FloatArray, rng: np.random.Generator, samples: int = 10,
             queue_ms: float = 2.0, outlier_p: float = 0.1, modulus_ms: float = 5.0) -> FloatArray:
    """Filtered httpping estimate of every entry of ``true_ms`` (zeros stay zero)."""
    shape = true_ms.shape + (samples,)
    raw = true_ms[..., None] * (1.0 + 0.05 * rng.standard_normal(shape))
    raw = np.abs(raw) + rng.exponential(queue_ms, shape)
    raw += np.where(rng.random(shape) < outlier_p, rng.uniform(50.0, 300.0, shape), 0.0)
    flat = raw.reshape(-1, samples)
    est = np.array([gnp.filter_samples(row, modulus_ms) for row in flat]).reshape(true_ms.shape)
    return np.where(true_ms > 0, est, 0.0)


def farthest_landmarks(rtt_ms: FloatArray, count: int, rng: np.random.Generator) -> IntArray:
    """``count`` crawlers by farthest-point sampling from a random first one."""
    n = rtt_ms.shape[0]
    if not 2 <= count <= n:
        raise ConfigError(f"landmark count must be in 2..{n}, got {count}")
    chosen = [int(rng.integers(n))]
    nearest = rtt_ms[chosen[0]].copy()
    for _ in range(count - 1):
        nearest[chosen] = -1.0
        chosen.append(int(np.argmax(nearest)))
        nearest = np.minimum(nearest, rtt_ms[chosen[-1]])
    return np.array(chosen, dtype=np.int64)


def _coordinates(world: World, landmarks: IntArray, dims: int, rng: np.random.Generator,
                 measured_cc: FloatArray, measured_cs: FloatArray) -> tuple[FloatArray, FloatArray]:
    lm = gnp.fit_landmarks(measured_cc[np.ix_(landmarks, landmarks)], dims, rng, restarts=1)
    to_lm = measured_cc[:, landmarks]
    crawlers = np.empty((world.crawler_xy.shape[0], dims))
    others = np.setdiff1d(np.arange(crawlers.shape[0]), landmarks)
    crawlers[landmarks] = lm
    if others.size:
        crawlers[others] = gnp.place(lm, to_lm[others], rng, restarts=0)
    sites = gnp.place(lm, measured_cs[landmarks].T, rng, restarts=0)
    return crawlers, sites


def accuracy(world: World, landmarks: IntArray, dims: int, rng: np.random.Generator,
             tol: float = 0.2, measured: tuple[FloatArray, FloatArray] | None = None) -> float:
    """Fraction of crawler-site RTTs that GNP predicts within ``tol`` relative error."""
    cc, cs = measured if measured is not None else (
        httpping(world.crawler_crawler(), rng), httpping(world.crawler_site(), rng))
    crawlers, sites = _coordinates(world, landmarks, dims, rng, cc, cs)
    predicted = gnp.predict(crawlers[:, None, :], sites[None, :, :])
    errors = gnp.relative_errors(world.crawler_site(), np.asarray(predicted))
    return float((errors <= tol).mean())


def accuracy_table(world: World, dims_list: Sequence[int], landmark_counts: Sequence[int],
                   rng: np.random.Generator, tol: float = 0.2,
                   noisy: bool = True) -> tuple[str, FloatArray]:
    """Accuracy for every (dims, landmarks) pair, with one httpping campaign for all
    (``noisy=False``: the landmarks measure true RTTs, isolating the embedding error)."""
    cc, cs = world.crawler_crawler(), world.crawler_site()
    measured = (httpping(cc, rng), httpping(cs, rng)) if noisy else (cc, cs)
    grid = np.full((len(dims_list), len(landmark_counts)), np.nan)
    for j, count in enumerate(landmark_counts):
        landmarks = farthest_landmarks(world.crawler_crawler(), count, rng)
        for i, dims in enumerate(dims_list):
            if dims < count:
                grid[i, j] = accuracy(world, landmarks, dims, rng, tol, measured)
    rows = [[d] + [float(v) for v in grid[i]] for i, d in enumerate(dims_list)]
    headers = ["dims"] + [f"L={c}" for c in landmark_counts]
    source = "filtered httpping" if noisy else "exact RTTs"
    text = render(headers, rows, f"GNP accuracy ({source}): share of crawler-site RTTs within "
                  f"{tol:.0%} (documents: ~0.74 with 9 landmarks, 6-8 dims)")
    return text, grid


def assign_sites(strategy: str, crawlers: FloatArray, sites: FloatArray,
                 rng: np.random.Generator) -> IntArray:
    """Crawler of every site under ``random``, ``top1`` or ``top3``."""
    if strategy == "random":
        return np.asarray(rng.integers(0, crawlers.shape[0], sites.shape[0]), dtype=np.int64)
    if strategy in ("top1", "top3"):
        k = int(strategy[3:])
        return np.array([gnp.choose_node(s, crawlers, k, rng) for s in sites], dtype=np.int64)
    raise ConfigError(f"unknown site assignment {strategy!r}; choose from {ASSIGNMENTS}")


@dataclass(frozen=True)
class ThroughputRow:
    strategy: str
    pages_at_horizon: int
    pages_per_s: float
    gain: float
    gain_total: float
    """Whole-crawl throughput gain: ``end_s(first) / end_s - 1``."""
    mean_rtt_ms: float
    max_sites_per_crawler: int
    end_s: float


def throughput(graph: LinkGraph, world: World, rng: np.random.Generator,
               params: CrawlParams | None = None, landmarks: int = 9, dims: int = 7,
               strategies: Sequence[str] = ASSIGNMENTS) -> tuple[list[ThroughputRow], float]:
    """Simulated crawl throughput under each assignment; returns rows and the horizon T."""
    if world.site_xy.shape[0] != graph.n_hosts:
        raise ConfigError(f"the world has {world.site_xy.shape[0]} sites, the graph {graph.n_hosts} hosts")
    params = params or DEFAULT_PARAMS
    cc, cs = httpping(world.crawler_crawler(), rng), httpping(world.crawler_site(), rng)
    lms = farthest_landmarks(world.crawler_crawler(), landmarks, rng)
    crawlers, sites = _coordinates(world, lms, dims, rng, cc, cs)
    true = world.crawler_site() / 1000.0
    adj = adjacency(graph)
    seeds = default_seeds(graph, graph.n_hosts)
    costs = page_costs(graph, params, rng)
    runs = {}
    for strategy in strategies:
        owner = assign_sites(strategy, crawlers, sites, rng)
        run = simulate(graph, owner, seeds, params, costs, rtt_s=true, adj=adj)
        runs[strategy] = (run, owner)
    base = runs[strategies[0]][0]
    horizon = float(base.fetch_time[max(0, base.fetch_time.size // 2 - 1)])
    base_pages = int(np.searchsorted(base.fetch_time, horizon, side="right"))
    rows = []
    for strategy, (run, owner) in runs.items():
        pages = int(np.searchsorted(run.fetch_time, horizon, side="right"))
        rows.append(ThroughputRow(
            strategy, pages, pages / horizon, pages / max(1, base_pages) - 1.0,
            base.end_time / max(run.end_time, 1e-9) - 1.0,
            float(true[owner, np.arange(owner.size)].mean() * 1000.0),
            int(np.bincount(owner).max()), run.end_time))
    return rows, horizon


def throughput_table(rows: Sequence[ThroughputRow], horizon_s: float) -> str:
    headers = ["assignment", "pages@T", "pages/s", "gain@T", "gain_total", "doc_gain",
               "mean_rtt_ms", "max_sites/crawler", "end_s"]
    body = [[r.strategy, r.pages_at_horizon, r.pages_per_s, r.gain, r.gain_total,
             DOC_GAIN.get(r.strategy, float("nan")), r.mean_rtt_ms, r.max_sites_per_crawler, r.end_s]
            for r in rows]
    return render(headers, body, f"GNP scheduling: throughput by T = {horizon_s:,.0f} s")


def plot(grid: FloatArray, dims_list: Sequence[int], landmark_counts: Sequence[int],
         rows: Sequence[ThroughputRow], fig: Figure) -> None:
    """Left: accuracy against dims per landmark count; right: throughput gain per assignment."""
    left, right = fig.subplots(1, 2)
    for j, count in enumerate(landmark_counts):
        left.plot(dims_list, grid[:, j], marker="o", label=f"{count} landmarks")
    left.set_xlabel("dimensions")
    left.set_ylabel("share within tolerance")
    left.set_ylim(0, 1)
    left.legend(fontsize="small")
    names = [r.strategy for r in rows]
    x = np.arange(len(rows))
    right.bar(x - 0.27, [r.gain for r in rows], width=0.27, label="simulated, pages by T")
    right.bar(x, [r.gain_total for r in rows], width=0.27, label="simulated, whole crawl")
    right.bar(x + 0.27, [DOC_GAIN.get(n, 0.0) for n in names], width=0.27, label="study")
    right.set_xticks(x, names)
    right.set_ylabel("throughput gain over random")
    right.legend(fontsize="small")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    fig.suptitle("GNP-based scheduling")
