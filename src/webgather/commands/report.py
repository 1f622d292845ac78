"""What ``crawl``, ``recrawl`` and ``node`` print at the end of a crawl, a cluster run or a cycle (results, on stdout)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from webgather.exitcodes import ExitCode
from webgather.logs import logs_to_file

__all__ = ["EXIT_INTERRUPTED", "cycle_exit_code", "exit_code", "exit_line", "page_times", "print_cluster_summary",
           "print_cycle", "print_summary"]

log = logging.getLogger(__name__)

EXIT_INTERRUPTED = ExitCode.INTERRUPTED
"""Ctrl-C (SIGINT) stopped the crawl, its state kept: the same command resumes it (one node,
``--workers`` and ``webgather node`` alike; SIGTERM is a graceful leave and exits 0)."""
NOT_TRIED = frozenset({"robots", "off_scope", "excluded"})
"""Crawl-log errors of URLs no request was made for (robots.txt denied them, or the scope did)."""


def print_summary(summary: dict[str, Any]) -> None:
    status = ", ".join(f"{k}: {v}" for k, v in summary.get("status", {}).items()) or "none"
    errors = ", ".join(f"{k}: {v}" for k, v in summary.get("errors", {}).items()) or "none"
    print(
        f"pages {summary['pages']}  in {summary['wall_s']} s  ({summary['pages_per_s']} pages/s, "
        f"{_cpu_per_page(summary)}peak RSS {summary['peak_rss_mib']} MiB)\n{page_times(summary)}\n"
        f"status  {status}\nerrors  {errors}\n"
        f"{_requisites_line(summary)}"
        f"robots.txt fetches {summary['robots_fetches']}, retries {summary['retries']}, "
        f"links found {summary['links_found']}, new URLs {summary['urls_new']}\n"
        f"finished: {summary['finished']}   (summary.json and WARC files in the output directory)"
    )
    runs = summary.get("runs") or []
    if len(runs) > 1:  # a resumed crawl: the figures above are its totals
        last = runs[-1]
        print(f"totals over {len(runs)} runs; this run: {last.get('pages', 0)} pages in {last.get('wall_s', 0)} s")
    if summary.get("print_json"):
        print(json.dumps(summary, indent=2))


def page_times(summary: dict[str, Any], *, nodes: bool = False) -> str:
    """When the pages came, beside pages/s: a crawl held by a few slow or dead hosts ends long after both."""
    p99, last = summary.get("pages_99_s"), summary.get("last_page_s")
    if p99 is None or last is None:
        return "no page fetched"
    whose = "every node had 99 % of its pages" if nodes else "99 % of the pages fetched"
    return f"{whose} by {p99:g} s, the last page at {last:g} s (from the start)"


def _requisites_line(summary: dict[str, Any]) -> str:
    """Page requisites fetched (images, stylesheets...), apart from the pages; nothing when there were none."""
    return f"requisites {summary['requisites']} (not counted as pages)\n" if summary.get("requisites") else ""


def _cpu_per_page(summary: dict[str, Any]) -> str:
    """``N ms CPU/page, `` where there were pages to divide by; nothing where there were none."""
    per_page = summary.get("cpu_ms_per_page")
    return "" if per_page is None else f"{per_page} ms CPU/page, "


def print_cycle(summary: dict[str, Any]) -> None:
    if summary.get("backend_error"):  # a cluster cycle whose Redis stayed away: the workers stopped
        print(f"backend: {summary['backend_error']}", file=sys.stdout)
    if not summary.get("recrawl"):
        print("cycle stopped before any node reported it; it resumes on the next run", file=sys.stdout)
        return
    r = summary["recrawl"]
    counts, totals = r["counts"], r["totals"]
    status = ", ".join(f"{k}: {v}" for k, v in summary.get("status", {}).items()) or "none"
    print(
        f"cycle {r['cycle']} ({r['policy']}, budget {r['budget'] or 'none'}): "
        f"{'done' if r['cycle_done'] else 'stopped, resumes on the next run'}\n"
        f"fetches {counts.get('fetches', 0)}: new pages {counts.get('new_pages', 0)}, "
        f"revisits {counts.get('revisits', 0)} of {r['planned_revisits']} planned "
        f"(changed {counts.get('changed', 0)}, 304 {counts.get('not_modified', 0)}, "
        f"same digest {counts.get('same_digest', 0)}), robots.txt {summary.get('robots_fetches', 0)}\n"
        f"status  {status}\n"
        f"archived {counts.get('bytes_archived', 0)} payload bytes; near-duplicates {counts.get('near_duplicates', 0)}\n"
        f"URLs {totals['urls']}: active {totals['active']}, dead {totals['dead']} "
        f"(new this cycle: {len(r['dead_this_cycle'])}); {_freshness(summary)}",
        file=sys.stdout,
    )
    for url, reason in r["dead_this_cycle"][:20]:
        print(f"  dead ({reason}) {url}")


def _freshness(summary: dict[str, Any]) -> str:
    """The cycle's freshness estimate, unless no fetch of the cycle got an answer (it would be a guess)."""
    if _cycle_answers(summary["recrawl"]["counts"]) == 0:
        return "freshness not measured: no fetch of this cycle got an answer"
    return f"estimated freshness now {summary['recrawl']['estimated_freshness']}"


def _cycle_answers(counts: dict[str, int]) -> int:
    return int(counts.get("fetches", 0)) - int(counts.get("no_response", 0))


def print_cluster_summary(summary: dict[str, Any]) -> None:
    load = summary["load"]
    var = load["var_share_mean"]
    print(f"pages {summary['pages']} in {summary['wall_s']} s ({summary['pages_per_s']} pages/s) "
          f"by {len(summary['nodes'])} node(s)\n{page_times(summary, nodes=True)}")
    for node, figures in summary["nodes"].items():
        print(f"  {node}: {figures['pages']} pages, {figures['pages_per_s']} pages/s, ended: {figures['end']}")
    cross = summary["cross"]
    per_page = "" if cross.get("messages_per_page") is None else f"{cross['messages_per_page']} messages/page, "
    print(f"cross URLs: {cross.get('urls', 0)} in {cross.get('messages', 0)} messages "
          f"({per_page}{cross.get('bytes', 0)} bytes), "
          f"{cross.get('cache_saved', 0)} saved by the sent-URL cache")
    print(f"load balance: variance of per-node share per {load['interval_s']:g} s interval: "
          f"mean {var:.2e}" if var is not None else "load balance: not enough intervals")
    if summary.get("losses"):
        print(summary["losses"])
    if summary.get("backend_error"):
        print(f"backend: {summary['backend_error']}")
    print(f"finished: {summary['finished']}   (summary.json in the output directory)")
    if summary.get("print_json"):
        print(json.dumps(summary, indent=2))


def exit_line(line: str, level: int = logging.ERROR) -> None:
    """A line that ends the command: plain on stderr in every log format (it answers the command line,
    scripts match it; see webgather.logs) and, with ``--log-file``, logged there too, so the file says
    why the run ended."""
    print(line, file=sys.stderr)
    if logs_to_file():
        log.log(level, line)


def exit_code(summary: dict[str, Any], *, resume: str = "run the same command to resume the crawl") -> int:
    """The command's exit status for a crawl run that ended with ``summary`` (errors raised are ``cli``'s;
    :mod:`webgather.exitcodes`): DATA_LOST if buckets were lost, INTERRUPTED after Ctrl-C (with a last
    line saying how to resume), NOTHING_FETCHED if every fetch failed (with a line saying so; a cluster node's
    ``crawl_answered``, the nodes of the crawl that had an answer, makes that the crawl's), else DONE."""
    if summary.get("losses"):
        return ExitCode.DATA_LOST
    if summary.get("interrupted") or summary.get("end") == "stopped":
        exit_line(f"webgather: interrupted; {resume}", logging.WARNING)
        return ExitCode.INTERRUPTED
    failed = _tried(summary.get("errors") or {})
    if failed and not summary.get("status") and not summary.get("crawl_answered"):  # a cluster node: the crawl's
        exit_line(f"webgather: nothing fetched: no request got an answer ({_kinds(summary.get('errors') or {})})")
        return ExitCode.NOTHING_FETCHED
    return ExitCode.DONE


def cycle_exit_code(summary: dict[str, Any]) -> int:
    """A re-crawl cycle's exit status: NOT_ENDED if it stopped before its end (it resumes on the next run),
    NOTHING_FETCHED if it tried and no fetch got an answer, else as :func:`exit_code`."""
    cycle = summary.get("recrawl")
    if not cycle or not cycle["cycle_done"]:
        return exit_code(summary) or ExitCode.NOT_ENDED
    if summary.get("losses") or summary.get("interrupted"):
        return exit_code(summary)
    tried = int(cycle["counts"].get("fetches", 0)) + _tried(summary.get("run_errors") or {})
    if tried and _cycle_answers(cycle["counts"]) == 0:
        exit_line(f"webgather: nothing fetched in cycle {cycle['cycle']}: no request got an answer "
                  f"({_kinds(summary.get('run_errors') or {}) or 'no response'})")
        return ExitCode.NOTHING_FETCHED
    return ExitCode.DONE


def _tried(errors: dict[str, int]) -> int:
    return sum(n for kind, n in errors.items() if kind not in NOT_TRIED)


def _kinds(errors: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(errors.items()) if kind not in NOT_TRIED)
