"""Plots on small crawls: a plot without data is not drawn (a note says why), time axes fit the crawl."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pytest

from webgather.analysis import AnalysisOptions, analyze, fetch_table
from webgather.analysis.crawldir import write_report
from webgather.analysis.load import NodeLoad
from webgather.analysis.plots import all_plots, load_png, plot_notes, time_axis
from webgather.analysis.trawl import CoreCount
from webgather.linkgraph import LinkGraph


def _analysis() -> object:
    graph = LinkGraph(np.array([0, 1], np.int64), np.array([1, 0], np.int64), np.zeros(2, np.int64), ("",),
                      np.ones(2, bool), ("", ""))
    return analyze(graph, fetch_table([]), AnalysisOptions(sample_sources=2))


@pytest.mark.parametrize(("span_s", "unit"), [(0.0, "seconds"), (4.2, "seconds"), (179.0, "seconds"),
                                              (600.0, "minutes"), (3 * 3600.0 - 1, "minutes"),
                                              (3 * 3600.0, "hours"), (86400.0 * 3, "hours")])
def test_the_time_axis_unit_follows_the_crawl_s_length(span_s: float, unit: str) -> None:
    per_unit, name = time_axis(span_s)
    assert name == unit and per_unit == {"seconds": 1.0, "minutes": 60.0, "hours": 3600.0}[unit]


def test_a_4_s_crawl_s_load_plot_is_drawn_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    labels: list[str] = []
    from matplotlib.axes import Axes

    real = Axes.set_xlabel
    monkeypatch.setattr(Axes, "set_xlabel", lambda self, text, *a, **k: labels.append(text) or real(self, text))
    load = NodeLoad(nodes=("n0",), interval_s=0.4, start=0.0, pages=[[30]] * 10, variance=[0.0] * 10,
                    mean_variance=0.0, max_variance=0.0, total_per_node=[300], overall_share=[1.0])
    assert load_png(load).startswith(b"\x89PNG")
    assert [text for text in labels if text] == ["seconds since the first fetch (end of interval)"]


def test_cores_are_drawn_only_when_some_were_found(tmp_path: Path) -> None:
    analysis = _analysis()
    assert "cores.png" not in all_plots(analysis) and "cores.png" in plot_notes(analysis)  # type: ignore[arg-type]
    written = write_report(analysis, tmp_path, "t")  # type: ignore[arg-type]
    report = json.loads((tmp_path / "report.json").read_text())
    assert "cores.png" not in written and report["plots_not_drawn"]["cores.png"].startswith("not drawn: no bipartite")
    trawl = analysis.trawl  # type: ignore[attr-defined]
    sizes = trawl.center_sizes
    found = CoreCount(fraction=1.0, fans=5, pruned_fans=dict.fromkeys(sizes, 5), pruned_centers=dict.fromkeys(sizes, 3),
                      cores={j: int(j == sizes[0]) for j in sizes}, truncated=False)
    with_cores = dataclasses.replace(analysis, trawl=dataclasses.replace(trawl, growth=[found]))  # type: ignore[type-var]
    assert "cores.png" in all_plots(with_cores) and "cores.png" not in plot_notes(with_cores)
    assert io.BytesIO(all_plots(with_cores)["cores.png"]).read(4) == b"\x89PNG"
