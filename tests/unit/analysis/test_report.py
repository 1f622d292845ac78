"""The whole analysis on small and degenerate graphs; JSON, text and HTML never fail."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from webgather.analysis import AnalysisOptions, analyze, fetch_table, summary_text, to_json
from webgather.analysis.html import report_html
from webgather.analysis.plots import all_plots, plot_notes
from webgather.analysis.report import jsonable
from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph

from .reference import adjacency, pagerank, random_graph


def _graph(n: int, edges: list[tuple[int, int]]) -> LinkGraph:
    src = np.array([s for s, _ in edges], dtype=np.int64)
    dst = np.array([d for _, d in edges], dtype=np.int64)
    return LinkGraph(src, dst, np.zeros(n, np.int64), ("",) if n else (), np.ones(n, bool), ("",) * n)


@pytest.mark.parametrize(
    "graph",
    [_graph(0, []), _graph(1, []), _graph(3, []), _graph(2, [(0, 1)]), _graph(4, [(0, 1), (1, 2), (2, 3), (3, 0)])],
    ids=["empty", "one-page", "no-links", "one-link", "cycle"],
)
def test_degenerate_graphs_give_a_full_report(graph: LinkGraph) -> None:
    analysis = analyze(graph, fetch_table([]), AnalysisOptions(sample_sources=5))
    data = json.loads(json.dumps(to_json(analysis), allow_nan=False))
    assert data["links"]["pages"] == graph.n_pages
    assert data["crawl"]["pages"] == 0 and data["load"] is None
    assert "documents" in summary_text(analysis)
    plots, notes = all_plots(analysis), plot_notes(analysis)
    assert set(plots) == {"degrees.png", "bowtie.png"}  # no cores, no fetch times: nothing to draw
    assert set(notes) == {"cores.png", "load.png"} and all(n.startswith("not drawn: ") for n in notes.values())
    page = report_html(analysis, plots, notes=notes)
    assert page.startswith("<!DOCTYPE html>") and "cores.png: not drawn: no bipartite cores" in page


def test_figures_of_a_random_graph_match_references() -> None:
    g = random_graph(random.Random(51), 60, 240, n_hosts=6)
    analysis = analyze(g, None, AnalysisOptions(sample_sources=1000, top_k=5))
    adj = adjacency(g)
    ranks = pagerank(adj)
    best = sorted(range(60), key=lambda v: (-ranks[v], v))[:5]
    assert [name for name, _ in analysis.pagerank] == [f"page#{v}" for v in best]
    assert analysis.links.distinct_links == sum(len(a) for a in adj)
    assert analysis.degrees["in"].histogram == [
        (k, c) for k, c in enumerate(np.bincount([len(r) for r in _rev(adj)]).tolist()) if c
    ]
    assert analysis.paths.stderr == 0.0 and analysis.crawl is None and analysis.load is None
    assert sum(analysis.bowtie.sizes().values()) == 60


def _rev(adj: list[set[int]]) -> list[set[int]]:
    rev: list[set[int]] = [set() for _ in adj]
    for s, outs in enumerate(adj):
        for d in outs:
            rev[d].add(s)
    return rev


def test_jsonable_converts_nan_numpy_and_tuples() -> None:
    assert jsonable({1: (math.nan, np.int64(3), np.float64(0.5), [math.inf])}) == {"1": [None, 3, 0.5, [None]]}


def test_options_are_validated() -> None:
    with pytest.raises(AnalysisError):
        AnalysisOptions(sample_sources=0)
    with pytest.raises(AnalysisError):
        AnalysisOptions(damping=1.0)
    with pytest.raises(AnalysisError):
        AnalysisOptions(max_fit_values=3)
