"""An :class:`~webgather.analysis.run.Analysis` as JSON data and as a one-page text summary. Pure.

:func:`to_json` gives every figure as plain JSON data (NaN and infinity
become ``null``); :func:`summary_text` the page printed to stdout, with the
documents' figures (:data:`~webgather.analysis.paper.PAPER`) beside ours.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from webgather.analysis.degrees import DegreeStats
from webgather.analysis.paper import PAPER
from webgather.analysis.run import Analysis

__all__ = ["jsonable", "summary_text", "to_json"]

_KB = 1024.0


def jsonable(value: Any) -> Any:
    """Plain JSON data: dataclasses as dicts, tuples as lists, NaN as None, keys as str."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name.rstrip("_"): jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return jsonable(value.item())
    return value


def to_json(analysis: Analysis) -> dict[str, Any]:
    """Every figure of the analysis, and the documents' figures under ``paper``."""
    data: dict[str, Any] = jsonable(analysis)
    data["bowtie"]["regions"] = analysis.bowtie.sizes()
    data["paper"] = dict(PAPER)
    return data


def _num(value: float | int | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1000:
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def _pct(part: float, digits: int = 1) -> str:
    return f"{100.0 * part:.{digits}f} %"


def _row(label: str, ours: str, paper: str = "") -> str:
    return f"  {label:<30} {ours:>18}   {paper}"


def _totals_lines(analysis: Analysis) -> list[str]:
    links, crawl = analysis.links, analysis.crawl
    lines = ["Totals                                        ours   documents (doc. 2)"]
    if crawl is not None:
        lines += [
            _row("pages fetched (2xx)", _num(crawl.pages), _num(PAPER["pages"])),
            _row("fetches (any status)", _num(crawl.fetches)),
            _row("hosts with pages", _num(crawl.hosts)),
            _row("pages per host", _num(crawl.pages_per_host), _num(PAPER["pages_per_host"])),
            _row("average page size (KB)", _num(crawl.avg_page_bytes / _KB), _num(PAPER["avg_page_kb"])),
            _row("median page size (KB)", _num(crawl.median_page_bytes / _KB)),
        ]
    lines += [
        _row("pages in the link graph", _num(links.pages)),
        _row("links", _num(links.links), _num(PAPER["links"])),
        _row("average out-degree", _num(links.avg_out_degree), _num(PAPER["avg_out_degree"], 1)),
        _row("distinct links per page", _num(links.avg_distinct_out_degree)),
        _row("links to other hosts", _pct(links.cross_host_share)),
        _row("links outside the crawl", _pct(links.outside_share), "1 % (leave the country)"),
    ]
    if crawl is not None and crawl.status_mix:
        total = sum(crawl.status_mix.values())
        mix = ", ".join(f"{k} {_pct(v / total)}" for k, v in list(crawl.status_mix.items())[:6])
        lines.append(f"  status mix: {mix}")
    if crawl is not None and (crawl.bad_entries or crawl.retries):
        lines.append(f"  crawl log: {crawl.retries:,} retried attempts, {crawl.bad_entries:,} unusable entries")
    return lines


def _fit_text(stats: DegreeStats) -> str:
    fit = stats.fit
    if fit is None:
        return f"no fit ({stats.fit_note})"
    sample = "" if fit.n_values == fit.n_total else f" (sample {fit.n_values:,} of {fit.n_total:,})"
    verdict = "power law" if fit.lognormal_llr > 0 else "log-normal"
    if fit.note:
        verdict = fit.note
    return (
        f"alpha {fit.alpha:.2f} +- {fit.alpha_stderr:.2f}, x_min {fit.x_min:g}, KS {fit.ks_distance:.3f}, "
        f"vs log-normal R {fit.lognormal_llr:+.1f} p {fit.lognormal_p:.2g} ({verdict}){sample}"
    )


def _degree_lines(analysis: Analysis) -> list[str]:
    lines = ["Degrees (discrete power-law MLE)"]
    for key, stats in analysis.degrees.items():
        paper = f"   documents: {PAPER['in_degree_alpha']}" if key == "in" else ""
        lines.append(f"  {stats.name:<27} mean {stats.mean:.2f}, max {stats.maximum:,}: {_fit_text(stats)}{paper}")
    return lines


def _structure_lines(analysis: Analysis) -> list[str]:
    bow, paths = analysis.bowtie, analysis.paths
    n = max(bow.n_pages, 1)
    regions = ", ".join(f"{k} {_num(v)} ({_pct(v / n)})" for k, v in bow.sizes().items())
    return [
        "Structure",
        f"  bow-tie: {regions}",
        f"  {bow.n_scc:,} strongly connected components, {bow.n_wcc:,} weak; "
        f"tendrils reached from IN or reaching OUT: {bow.tendrils_strict:,}",
        f"  shortest paths: mean {_num(paths.mean_distance)} +- {_num(paths.stderr)} "
        f"({paths.sources:,} BFS sources of {paths.population:,}, {paths.pairs:,} pairs); "
        f"diameter >= {paths.diameter_lower_bound}   documents: {PAPER['mean_distance']:g}",
    ]


def _ranked_line(label: str, ranked: list[tuple[str, float]], k: int = 3) -> str:
    return f"  {label}: " + "; ".join(f"{name} {score:.4f}" for name, score in ranked[:k])


def _rank_lines(analysis: Analysis) -> list[str]:
    return [
        "Ranking",
        _ranked_line("PageRank", analysis.pagerank),
        _ranked_line("hubs", analysis.hubs),
        _ranked_line("authorities", analysis.authorities),
        f"  host graph: {analysis.links.hosts:,} hosts, {analysis.host_edges:,} weighted cross-host edges",
        _ranked_line("top hosts (host PageRank)", analysis.top_hosts["pagerank"]),
    ]


def _trawl_lines(analysis: Analysis) -> list[str]:
    t = analysis.trawl
    last = t.growth[-1]
    cores = ", ".join(f"K({t.min_fans}+,{j}) {last.cores[j]:,}" for j in t.center_sizes)
    growth = " ".join(
        f"{int(round(g.fraction * 100))}%:" + "/".join(str(g.cores[j]) for j in t.center_sizes)
        for g in t.growth
    )
    cut = "  (enumeration cut at max_cores)" if any(g.truncated for g in t.growth) else ""
    return [
        "Communities (trawling)",
        f"  {t.fans:,} fans (links to >= {t.min_fan_hosts} other hosts); {t.removed_centers:,} centers "
        f"dropped (effective in-degree > {t.max_center_effective_in}); {t.candidate_links:,} candidate links",
        f"  cores: {cores}{cut}",
        f"  cores as fans grow: {growth}",
    ]


def _load_lines(analysis: Analysis) -> list[str]:
    load = analysis.load
    if load is None:
        return []
    shares = ", ".join(f"{n} {s:.3f}" for n, s in zip(load.nodes, load.overall_share))
    return [
        "Load balance",
        f"  {len(load.nodes)} nodes, {len(load.pages)} intervals of {load.interval_s:g} s; "
        f"variance of normalized share: mean {_num(load.mean_variance, 6)}, max {_num(load.max_variance, 6)}"
        f"   documents: {PAPER['load_variance_min']:g} .. {PAPER['load_variance_max']:g}",
        f"  overall share (1 = fair): {shares}",
    ]


def summary_text(analysis: Analysis, title: str = "webgather analysis") -> str:
    """The one-page summary printed to stdout."""
    parts = [
        [title],
        _totals_lines(analysis),
        _degree_lines(analysis),
        _structure_lines(analysis),
        _rank_lines(analysis),
        _trawl_lines(analysis),
        _load_lines(analysis),
    ]
    if analysis.timings_s:
        parts.append(["Stage seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in analysis.timings_s.items())])
    return "\n".join("\n".join(p) for p in parts if p) + "\n"
