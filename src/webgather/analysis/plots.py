"""PNG plots of an analysis (matplotlib's Agg canvas; no pyplot, no global state).

Each function returns PNG bytes: the caller writes them to files and embeds
them in the HTML report. Plots: in/out/effective in-degree CCDFs on log-log
axes with the fitted power law, bow-tie region sizes, cores against candidate
fans, and per-node pages per interval with the load variance (its time axis in seconds,
minutes or hours by the crawl's length). A plot with nothing to show is not drawn:
:func:`plot_notes` says why, in one line for the report.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from webgather.analysis.bowtie import REGIONS
from webgather.analysis.degrees import DegreeStats
from webgather.analysis.load import NodeLoad
from webgather.analysis.run import Analysis
from webgather.analysis.trawl import TrawlResult

__all__ = ["all_plots", "bowtie_png", "cores_png", "degrees_png", "load_png", "plot_notes", "time_axis"]

_DPI = 100
_TIME_UNITS = ((3 * 3600.0, 3600.0, "hours"), (180.0, 60.0, "minutes"), (0.0, 1.0, "seconds"))
"""(shortest crawl in seconds, seconds per unit, unit): hours from 3 h on, minutes from 3 min on."""


def time_axis(span_s: float) -> tuple[float, str]:
    """(seconds per unit, unit name) for a time axis spanning ``span_s`` seconds."""
    return next(((per, name) for least, per, name in _TIME_UNITS if span_s >= least), (1.0, "seconds"))


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI)
    return buffer.getvalue()


def _ccdf(stats: DegreeStats) -> tuple[np.ndarray, np.ndarray]:
    """(degree, share of positive values >= degree)."""
    pairs = np.asarray([p for p in stats.histogram if p[0] > 0], dtype=np.float64).reshape(-1, 2)
    if pairs.size == 0:
        return pairs[:, 0], pairs[:, 1]
    above = np.cumsum(pairs[::-1, 1])[::-1]
    return pairs[:, 0], above / above[0]


def _degree_panel(ax: Axes, stats: DegreeStats) -> None:
    x, y = _ccdf(stats)
    ax.set_title(stats.name)
    ax.set_xlabel("degree k")
    ax.set_ylabel("P(K >= k)")
    if x.size == 0:
        ax.text(0.5, 0.5, "no links", ha="center", transform=ax.transAxes)
        return
    ax.loglog(x, y, ".", markersize=3, label="observed")
    fit = stats.fit
    if fit is not None:
        tail = x[x >= fit.x_min]
        share = fit.n_tail / max(fit.n_values, 1)
        line = share * (tail / fit.x_min) ** (1.0 - fit.alpha)
        ax.loglog(tail, line, "-", label=f"alpha = {fit.alpha:.2f}, x_min = {fit.x_min:g}")
    ax.legend(fontsize=8)


def degrees_png(degrees: dict[str, DegreeStats]) -> bytes:
    figure = Figure(figsize=(4.2 * len(degrees), 3.8), layout="constrained")
    for ax, stats in zip(figure.subplots(1, len(degrees), squeeze=False)[0], degrees.values()):
        _degree_panel(ax, stats)
    return _png(figure)


def bowtie_png(sizes: dict[str, int]) -> bytes:
    figure = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = figure.subplots()
    values = [sizes[r] for r in REGIONS]
    bars = ax.bar(list(REGIONS), values, color="tab:blue")
    ax.bar_label(bars, labels=[f"{v:,}" for v in values], fontsize=8)
    ax.set_ylabel("pages")
    ax.set_title("bow-tie regions")
    return _png(figure)


def cores_png(result: TrawlResult) -> bytes:
    figure = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = figure.subplots()
    fans = [g.fans for g in result.growth]
    for j in result.center_sizes:
        ax.plot(fans, [g.cores[j] for g in result.growth], "o-", label=f"K({result.min_fans}+, {j})")
    ax.set_xlabel("candidate fans")
    ax.set_ylabel("cores")
    ax.set_title("bipartite cores as the candidate set grows")
    ax.legend(fontsize=8)
    return _png(figure)


def load_png(load: NodeLoad) -> bytes:
    figure = Figure(figsize=(6.4, 7.0), layout="constrained")
    total, per_interval, spread = figure.subplots(3, 1, sharex=True)
    per_unit, unit = time_axis(len(load.pages) * load.interval_s)
    ends = np.arange(1, len(load.pages) + 1) * load.interval_s / per_unit
    counts = np.asarray(load.pages, dtype=np.float64)
    for i, node in enumerate(load.nodes):
        total.plot(ends, np.cumsum(counts[:, i]), "-", label=node)
        per_interval.plot(ends, counts[:, i], "-", label=node)
    total.set_ylabel("pages so far")
    total.set_title("per-node load")
    if len(load.nodes) <= 12:
        total.legend(fontsize=7)
    per_interval.set_ylabel(f"pages per {load.interval_s:.3g} s")
    variance = np.asarray([np.nan if v is None else v for v in load.variance], dtype=np.float64)
    spread.plot(ends, variance, "o-", color="tab:red")
    spread.set_ylabel("variance of share")
    if len(load.nodes) == 1:
        spread.text(0.5, 0.8, "one node: its share is the whole crawl (variance 0)", ha="center",
                    transform=spread.transAxes)
    spread.set_xlabel(f"{unit} since the first fetch (end of interval)")
    return _png(figure)


def plot_notes(analysis: Analysis) -> dict[str, str]:
    """File name -> why that plot is not drawn (it would show nothing), one line each."""
    notes: dict[str, str] = {}
    trawl = analysis.trawl
    if not any(count for g in trawl.growth for count in g.cores.values()):
        notes["cores.png"] = (f"not drawn: no bipartite cores K({trawl.min_fans}+, j) for j in "
                              f"{', '.join(map(str, trawl.center_sizes))} ({trawl.fans} candidate fans)")
    if analysis.load is None:
        notes["load.png"] = "not drawn: no crawl log, so no fetch times per node"
    return notes


def all_plots(analysis: Analysis) -> dict[str, bytes]:
    """File name -> PNG bytes for every plot that has data (the others: :func:`plot_notes`)."""
    skipped = plot_notes(analysis)
    plots = {
        "degrees.png": degrees_png(analysis.degrees),
        "bowtie.png": bowtie_png(analysis.bowtie.sizes()),
    }
    if "cores.png" not in skipped:
        plots["cores.png"] = cores_png(analysis.trawl)
    if analysis.load is not None:
        plots["load.png"] = load_png(analysis.load)
    return plots
