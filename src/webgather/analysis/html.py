"""One self-contained ``report.html``: the tables and the PNGs (base64), no external files. Pure."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

from webgather.analysis.paper import PAPER
from webgather.analysis.report import summary_text
from webgather.analysis.run import Analysis

__all__ = ["report_html"]

_STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}"
    "th{background:#eee}td:first-child,th:first-child{text-align:left}"
    "pre{background:#f6f6f6;padding:1em;font-size:12px;overflow-x:auto}img{max-width:100%}"
)

Cell = str | int | float | None


def _cell(value: Cell) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _totals(analysis: Analysis) -> str:
    links, crawl = analysis.links, analysis.crawl
    rows: list[Sequence[Cell]] = []
    if crawl is not None:
        rows += [
            ("pages fetched (2xx)", crawl.pages, PAPER["pages"]),
            ("fetches (any status)", crawl.fetches, None),
            ("hosts with pages", crawl.hosts, None),
            ("pages per host", crawl.pages_per_host, PAPER["pages_per_host"]),
            ("average page size (KB)", crawl.avg_page_bytes / 1024, PAPER["avg_page_kb"]),
            ("median page size (KB)", crawl.median_page_bytes / 1024, None),
        ]
    rows += [
        ("pages in the link graph", links.pages, None),
        ("links", links.links, PAPER["links"]),
        ("average out-degree", links.avg_out_degree, PAPER["avg_out_degree"]),
        ("share of links to other hosts", links.cross_host_share, None),
        ("share of links outside the crawl", links.outside_share, PAPER["outside_share"]),
    ]
    table = _table(("figure", "ours", "documents"), rows)
    if crawl is not None:
        table += _table(("status", "fetches"), list(crawl.status_mix.items()))
    return table


def _degrees(analysis: Analysis) -> str:
    rows: list[Sequence[Cell]] = []
    for key, d in analysis.degrees.items():
        f = d.fit
        paper = PAPER["in_degree_alpha"] if key == "in" else None
        if f is None:
            rows.append((d.name, d.mean, d.maximum, None, None, None, None, f"no fit: {d.fit_note}", paper))
            continue
        rows.append((d.name, d.mean, d.maximum, f.alpha, f.alpha_stderr, f.x_min, f.ks_distance,
                     f.note or f"{f.lognormal_llr:+.2f} (p {f.lognormal_p:.2g})", paper))
    header = ("degree", "mean", "max", "alpha", "stderr", "x_min", "KS D", "LR vs log-normal", "documents' alpha")
    return _table(header, rows)


def _structure(analysis: Analysis) -> str:
    bow, paths = analysis.bowtie, analysis.paths
    n = max(bow.n_pages, 1)
    regions = _table(("region", "pages", "share"), [(k, v, v / n) for k, v in bow.sizes().items()])
    path_rows: list[Sequence[Cell]] = [
        ("mean shortest-path length", paths.mean_distance, PAPER["mean_distance"]),
        ("standard error", paths.stderr, None),
        ("diameter lower bound", paths.diameter_lower_bound, None),
        ("BFS sources", paths.sources, None),
        ("strongly connected components", bow.n_scc, None),
    ]
    return regions + _table(("figure", "ours", "documents"), path_rows)


def _ranks(analysis: Analysis) -> str:
    parts = []
    for title, ranked in (("PageRank", analysis.pagerank), ("hubs", analysis.hubs),
                          ("authorities", analysis.authorities),
                          ("hosts by host PageRank", analysis.top_hosts["pagerank"]),
                          ("hosts by linking hosts", analysis.top_hosts["linking_hosts"])):
        parts.append(f"<h3>{html.escape(title)}</h3>" + _table(("", "score"), ranked))
    return "".join(parts)


def _cores(analysis: Analysis) -> str:
    t = analysis.trawl
    header = ["fraction", "fans"] + [f"cores K({t.min_fans}+,{j})" for j in t.center_sizes]
    rows = [[g.fraction, g.fans, *(g.cores[j] for j in t.center_sizes)] for g in t.growth]
    return _table(header, rows)


def _load(analysis: Analysis) -> str:
    load = analysis.load
    if load is None:
        return "<p>No crawl log: no per-node figures.</p>"
    rows = [(n, total, share) for n, total, share in zip(load.nodes, load.total_per_node, load.overall_share)]
    summary = _table(("figure", "ours", "documents"), [
        ("interval (s)", load.interval_s, None),
        ("mean variance of normalized share", load.mean_variance, "1e-5 .. 1e-3"),
        ("max variance", load.max_variance, None),
    ])
    return summary + _table(("node", "fetches", "share (1 = fair)"), rows)


def report_html(analysis: Analysis, plots: dict[str, bytes], title: str = "webgather analysis",
                notes: dict[str, str] | None = None) -> str:
    """The whole report as one HTML document with the PNGs inlined (``notes``: plots not drawn, and why)."""
    images = "".join(
        f'<h3>{html.escape(name)}</h3><img alt="{html.escape(name)}" '
        f'src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}">'
        for name, data in plots.items()
    ) + "".join(f"<p>{html.escape(name)}: {html.escape(note)}</p>" for name, note in (notes or {}).items())
    sections = [
        ("Totals", _totals(analysis)), ("Degrees", _degrees(analysis)),
        ("Structure", _structure(analysis)), ("Ranking", _ranks(analysis)),
        ("Communities (trawling)", _cores(analysis)), ("Load balance", _load(analysis)),
        ("Plots", images), ("Summary", f"<pre>{html.escape(summary_text(analysis, title))}</pre>"),
    ]
    body = "".join(f"<h2>{html.escape(name)}</h2>{content}" for name, content in sections)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )
