"""The IO shell of the analysis: read a crawl directory, write the report files.

:func:`load_crawl` reads one node's directory or a cluster's ``DIR/nodes/*``
(every ``crawl.log.jsonl`` and link log below ``DIR``): the link graph
through :func:`webgather.store.graphread.read_link_graph`, the crawl logs
through :func:`webgather.store.crawllog.read_crawl_log` into one
:class:`~webgather.analysis.fetchlog.FetchTable` (an entry without ``node``
is credited to its directory's name).

:func:`write_report` writes ``report.json``, the PNGs and ``report.html``
into an output directory and returns their paths (a plot with nothing to show is not
drawn: ``report.json``'s ``plots_not_drawn`` and the HTML say why).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from webgather.analysis.fetchlog import FetchTable, fetch_table
from webgather.analysis.html import report_html
from webgather.analysis.plots import all_plots, plot_notes
from webgather.analysis.report import to_json
from webgather.analysis.run import Analysis
from webgather.errors import AnalysisError
from webgather.linkgraph import LinkGraph
from webgather.store.crawllog import CRAWL_LOG_NAME, read_crawl_log
from webgather.store.graphread import read_link_graph

__all__ = ["crawl_logs", "load_crawl", "write_report"]


def crawl_logs(directory: Path) -> list[Path]:
    """Every crawl log below ``directory`` (one node, or ``nodes/*``), sorted."""
    return sorted(Path(directory).rglob(CRAWL_LOG_NAME))


def _entries(logs: list[Path]) -> Iterator[dict[str, Any]]:
    for log in logs:
        for entry in read_crawl_log(log):
            if "node" not in entry:
                entry = {**entry, "node": log.parent.name}
            yield entry


def load_crawl(directory: Path) -> tuple[LinkGraph, FetchTable | None]:
    """(link graph, fetch table or None without a crawl log) of a crawl directory."""
    directory = Path(directory)
    if not directory.is_dir():
        raise AnalysisError(f"{directory} is not a directory")
    logs = crawl_logs(directory)
    graph = read_link_graph(directory)
    table = fetch_table(_entries(logs)) if logs else None
    if graph.n_pages == 0:
        raise AnalysisError(f"{directory}: the crawl holds no pages and no links")
    return graph, table


def write_report(analysis: Analysis, out_dir: Path, title: str) -> dict[str, Path]:
    """Write report.json, the PNG plots and report.html; name -> path."""
    out_dir = Path(out_dir)
    plots, notes = all_plots(analysis), plot_notes(analysis)
    written: dict[str, Path] = {}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        data = to_json(analysis)
        data["plots"] = sorted(plots)
        data["plots_not_drawn"] = notes
        text = json.dumps(data, indent=1, allow_nan=False) + "\n"
        written["report.json"] = _write(out_dir / "report.json", text.encode("utf-8"))
        for name, png in plots.items():
            written[name] = _write(out_dir / name, png)
        page = report_html(analysis, plots, title, notes)
        written["report.html"] = _write(out_dir / "report.html", page.encode("utf-8"))
    except OSError as exc:
        raise AnalysisError(f"cannot write the report to {out_dir}: {exc.strerror}") from exc
    return written


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
