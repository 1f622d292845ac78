"""The whole analysis of one crawl, stage by stage. Pure (values in, records out).

:func:`analyze` takes the crawl's :class:`~webgather.linkgraph.LinkGraph`,
optionally its :class:`~webgather.analysis.fetchlog.FetchTable`, and
:class:`AnalysisOptions`, and returns an :class:`Analysis` holding every
figure. Randomness (BFS sources, sampled fits, the order in which trawling
adds fans) comes from ``numpy.random.default_rng((seed, stage))``, so one
stage's draws never shift another's. Stage wall times are recorded when a
``timer`` (e.g. :meth:`webgather.clock.SystemClock.monotonic`) is
given; this module never reads the clock itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from webgather.analysis.bowtie import BowTie, bow_tie
from webgather.analysis.degrees import DegreeStats, degree_stats, effective_in_degree
from webgather.analysis.fetchlog import FetchTable
from webgather.analysis.graphops import SimpleGraph, simple_graph
from webgather.analysis.load import NodeLoad, node_load
from webgather.analysis.paths import PathStats, sampled_paths
from webgather.analysis.ranking import hits, host_graph, pagerank, top_indices, weighted_pagerank
from webgather.analysis.totals import CrawlTotals, LinkTotals, crawl_totals, link_totals
from webgather.analysis.trawl import TrawlResult, trawl
from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph

__all__ = ["Analysis", "AnalysisOptions", "Ranked", "analyze"]

Ranked = list[tuple[str, float]]
"""(page URL or host name, score), best first."""


@dataclass(frozen=True)
class AnalysisOptions:
    sample_sources: int = 100
    """BFS sources for the shortest-path estimate."""
    seed: int = 0
    top_k: int = 10
    interval_s: float | None = None
    """Load-balance interval; None = automatic (see :mod:`.load`)."""
    max_fit_values: int = 300_000
    """Power-law fits on more values use a seeded sample of this size."""
    trawl_steps: int = 10
    """Core counts at 1/steps, 2/steps, ... of the candidate fans."""
    max_cores: int = 1_000_000
    damping: float = 0.85

    def __post_init__(self) -> None:
        if self.sample_sources < 1 or self.top_k < 1 or self.trawl_steps < 1 or self.max_cores < 1:
            raise AnalysisError("sample_sources, top_k, trawl_steps and max_cores must be >= 1")
        if self.max_fit_values < 10:
            raise AnalysisError("max_fit_values must be >= 10")
        if not 0.0 < self.damping < 1.0:
            raise AnalysisError("damping must be between 0 and 1")


@dataclass
class Analysis:
    options: AnalysisOptions
    links: LinkTotals
    degrees: dict[str, DegreeStats]
    bowtie: BowTie
    paths: PathStats
    pagerank: Ranked
    hubs: Ranked
    authorities: Ranked
    rank_iterations: dict[str, int]
    host_edges: int
    top_hosts: dict[str, Ranked]
    trawl: TrawlResult
    crawl: CrawlTotals | None = None
    load: NodeLoad | None = None
    timings_s: dict[str, float] = field(default_factory=dict)


class _Stages:
    def __init__(self, timer: Callable[[], float] | None) -> None:
        self.timer = timer
        self.timings: dict[str, float] = {}
        self._last = timer() if timer else 0.0

    def done(self, name: str) -> None:
        if self.timer:
            now = self.timer()
            self.timings[name] = round(now - self._last, 3)
            self._last = now


def _label(graph: LinkGraph, page: int) -> str:
    """The page's URL, or ``page#<id>`` when the producer does not know it."""
    return (graph.urls[page] if graph.urls is not None else "") or f"page#{page}"


def _host_label(graph: LinkGraph, host: int) -> str:
    return graph.host_names[host] or f"host#{host}"


def _ranked(scores: np.ndarray, k: int, label: Callable[[int], str]) -> Ranked:
    return [(label(int(i)), float(scores[i])) for i in top_indices(scores, k)]


def _rank_pages(
    graph: LinkGraph, simple: SimpleGraph, opts: AnalysisOptions
) -> tuple[Ranked, Ranked, Ranked, dict[str, int]]:
    """(top PageRank, top hubs, top authorities, iterations used)."""
    pr = pagerank(simple, damping=opts.damping)
    hub, authority = hits(simple)
    label = lambda page: _label(graph, page)  # noqa: E731
    return (
        _ranked(pr.scores, opts.top_k, label),
        _ranked(hub.scores, opts.top_k, label),
        _ranked(authority.scores, opts.top_k, label),
        {"pagerank": pr.iterations, "hits": hub.iterations},
    )


def _rank_hosts(graph: LinkGraph, simple: SimpleGraph, opts: AnalysisOptions) -> tuple[int, dict[str, Ranked]]:
    hosts = host_graph(simple, graph.page_host, graph.n_hosts)
    name = lambda h: _host_label(graph, h)  # noqa: E731
    weighted_in = np.bincount(hosts.dst, weights=hosts.weight, minlength=hosts.n_hosts)
    linking = np.bincount(hosts.dst, minlength=hosts.n_hosts).astype(np.float64)
    rank = weighted_pagerank(hosts.matrix(), damping=opts.damping).scores
    return hosts.n_edges, {
        "pagerank": _ranked(rank, opts.top_k, name),
        "linking_hosts": _ranked(linking, opts.top_k, name),
        "cross_host_in_links": _ranked(weighted_in, opts.top_k, name),
        "pages": _ranked(hosts.pages.astype(np.float64), opts.top_k, name),
    }


def _degrees(
    graph: LinkGraph, simple: SimpleGraph, effective: np.ndarray, opts: AnalysisOptions
) -> dict[str, DegreeStats]:
    rng = np.random.default_rng((opts.seed, 1))
    fetched_out = simple.out_degree()[graph.fetched]
    return {
        "in": degree_stats("in-degree", simple.in_degree(), rng, max_fit_values=opts.max_fit_values),
        "out": degree_stats("out-degree (fetched pages)", fetched_out, rng, max_fit_values=opts.max_fit_values),
        "effective_in": degree_stats("effective in-degree", effective, rng, max_fit_values=opts.max_fit_values),
    }


def analyze(
    graph: LinkGraph,
    table: FetchTable | None = None,
    options: AnalysisOptions | None = None,
    *,
    timer: Callable[[], float] | None = None,
) -> Analysis:
    """Every figure of the analysis (see the package docstring for the list)."""
    opts = options or AnalysisOptions()
    stages = _Stages(timer)
    simple = simple_graph(graph)
    links = link_totals(graph, simple)
    crawl = crawl_totals(table) if table is not None else None
    stages.done("load_and_totals")
    effective = effective_in_degree(simple, graph.page_host)
    degrees = _degrees(graph, simple, effective, opts)
    stages.done("degrees_and_fits")
    bowtie = bow_tie(simple)
    stages.done("components_and_bowtie")
    paths = sampled_paths(simple, opts.sample_sources, np.random.default_rng((opts.seed, 2)))
    stages.done("shortest_paths")
    top_pages, top_hubs, top_authorities, iterations = _rank_pages(graph, simple, opts)
    host_edges, top_hosts = _rank_hosts(graph, simple, opts)
    stages.done("pagerank_hits_hosts")
    cores = trawl(simple, graph.page_host, effective, np.random.default_rng((opts.seed, 3)),
                  steps=opts.trawl_steps, max_cores=opts.max_cores)
    stages.done("trawling")
    load = node_load(table, opts.interval_s) if table is not None else None
    stages.done("node_load")
    return Analysis(
        options=opts, links=links, degrees=degrees, bowtie=bowtie, paths=paths,
        pagerank=top_pages, hubs=top_hubs, authorities=top_authorities, rank_iterations=iterations,
        host_edges=host_edges, top_hosts=top_hosts, trawl=cores, crawl=crawl, load=load,
        timings_s=stages.timings,
    )
