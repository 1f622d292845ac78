"""Load balance, traffic and status figures of a cluster crawl. Pure.

Load balance is the documents' Table 1: per interval (``cluster.interval_s``,
counted from the crawl's epoch on every node), each node's pages, its
*normalized share* ``x_i = n * pages_i / total`` (an even split is 1) and two
variances over the nodes, as in :mod:`webgather.sim.partition`:
``var_norm = mean_i (x_i - 1)^2`` and ``var_share = var_norm / n^2`` (the
variance of the raw shares ``pages_i / total``: the scale of Table 1's 1e-5 to
1e-3). A node counts in an interval if the interval lies within its own span
of intervals with pages (a node that joined later is not an idle node before).

:func:`merge_summaries` turns the nodes' ``summary.json`` files into the
crawl's (``DIR/summary.json``), with :func:`merge_recrawl` for a re-crawl cycle
(counters and totals summed: each URL's record is kept by exactly one node;
dead pages listed from every node; freshness weighted by active pages); :func:`status_text` renders what ``webgather
cluster status`` prints from the members' heartbeat info, the table and the
counters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from webgather.cluster.mapping import BucketTable

__all__ = ["MAX_DEAD_LISTED", "interval_load", "merge_hooks", "merge_recrawl", "merge_summaries", "status_text"]

MAX_DEAD_LISTED = 10_000


def interval_load(pages: Mapping[str, Mapping[int, int]]) -> list[dict[str, Any]]:
    """Per interval: each counted node's pages and normalized share, and the two variances."""
    spans = {node: (min(k for k, v in per.items() if v), max(k for k, v in per.items() if v))
             for node, per in pages.items() if any(per.values())}
    if not spans:
        return []
    first, last = min(a for a, _ in spans.values()), max(b for _, b in spans.values())
    rows = []
    for k in range(first, last + 1):
        counted = {node: int(pages[node].get(k, 0)) for node, (a, b) in sorted(spans.items()) if a <= k <= b}
        total, n = sum(counted.values()), len(counted)
        if not total:
            continue
        norm = {node: n * c / total for node, c in counted.items()}
        var_norm = sum((x - 1.0) ** 2 for x in norm.values()) / n
        rows.append({"interval": k, "pages": counted, "share": {m: round(x, 4) for m, x in norm.items()},
                     "var_norm": var_norm, "var_share": var_norm / (n * n)})
    return rows


def _load_summary(rows: list[dict[str, Any]], interval_s: float, full_only: bool = True) -> dict[str, Any]:
    # the first and last intervals are partial (start-up, the tail): report them, average the rest
    inner = rows[1:-1] if full_only and len(rows) > 2 else rows
    shares = [r["var_share"] for r in inner if len(r["pages"]) > 1]
    norms = [r["var_norm"] for r in inner if len(r["pages"]) > 1]
    return {
        "interval_s": interval_s, "intervals": rows,
        "var_share_mean": sum(shares) / len(shares) if shares else None,
        "var_share_max": max(shares) if shares else None,
        "var_norm_mean": sum(norms) / len(norms) if norms else None,
    }


def merge_summaries(summaries: Sequence[Mapping[str, Any]], *, wall_s: float | None = None,
                    finished: bool | None = None) -> dict[str, Any]:
    """The crawl's summary from its nodes' (``wall_s``: the crawl's own, else the longest node's)."""
    pages = sum(int(s.get("pages", 0)) for s in summaries)
    wall = wall_s if wall_s is not None else max((float(s.get("wall_s", 0.0)) for s in summaries), default=0.0)
    cross: Counter[str] = Counter()
    status: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    per_node: dict[str, dict[int, int]] = {}
    interval_s = 0.0
    for s in summaries:
        cross.update({k: int(v) for k, v in dict(s.get("cross", {})).items()})
        status.update({str(k): int(v) for k, v in dict(s.get("status", {})).items()})
        errors.update({str(k): int(v) for k, v in dict(s.get("errors", {})).items()})
        per_node[str(s["node"])] = dict(enumerate(s.get("pages_per_interval", [])))
        interval_s = float(s.get("interval_s", interval_s))
    return {
        "pages": pages, "wall_s": round(wall, 3), "pages_per_s": round(pages / wall, 1) if wall > 0 else 0.0,
        "nodes": {str(s["node"]): {k: s.get(k) for k in ("pages", "pages_per_s", "wall_s", "end", "cpu_ms_per_page")}
                  for s in summaries},
        "cross": {**cross, "messages_per_page": round(cross["messages"] / pages, 4) if pages else None,
                  "bytes_per_page": round(cross["bytes"] / pages, 1) if pages else None},
        "status": dict(sorted(status.items())), "errors": dict(sorted(errors.items())),
        "robots_fetches": sum(int(s.get("robots_fetches", 0)) for s in summaries),
        **{key: max((float(s[key]) for s in summaries if s.get(key) is not None), default=None)  # from the epoch:
           for key in ("pages_99_s", "last_page_s")},  # every node had 99 % of its pages by pages_99_s
        "load": _load_summary(interval_load(per_node), interval_s),
        "finished": finished,
        **({"recrawl": merge_recrawl(summaries)} if any("recrawl" in s for s in summaries) else {}),
        **({"hooks": merge_hooks(summaries)} if any("hooks" in s for s in summaries) else {}),
    }


def merge_hooks(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The page hooks' counts summed over the nodes, and each node's items file (``items_files``)."""
    counts: Counter[str] = Counter()
    files: dict[str, str] = {}
    for s in summaries:
        for key, value in dict(s.get("hooks", {})).items():
            if key == "items_file":
                files[str(s["node"])] = str(value)
            else:
                counts[str(key)] += int(value)
    return {**dict(sorted(counts.items())), "items_files": files}


def merge_recrawl(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The cluster's ``recrawl`` section from its nodes' (nodes without one are skipped)."""
    parts = [dict(s["recrawl"]) for s in summaries if "recrawl" in s]
    if not parts:
        return {}
    counts: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for part in parts:
        counts.update({str(k): int(v) for k, v in dict(part.get("counts", {})).items()})
        totals.update({str(k): int(v) for k, v in dict(part.get("totals", {})).items()})
    active = [(int(dict(p.get("totals", {})).get("active", 0)), float(p.get("estimated_freshness", 0.0)))
              for p in parts]
    weight = sum(n for n, _f in active)
    first = parts[0]
    return {
        "cycle": max(int(p["cycle"]) for p in parts), "policy": first.get("policy"), "budget": first.get("budget"),
        "planned_revisits": sum(int(p.get("planned_revisits", 0)) for p in parts),
        "cycle_done": all(bool(p.get("cycle_done")) for p in parts),
        "counts": dict(sorted(counts.items())), "totals": dict(sorted(totals.items())),
        "estimated_freshness": round(sum(n * f for n, f in active) / weight, 4) if weight else 1.0,
        "imported": sum(int(p.get("imported", 0)) for p in parts),
        "dead_this_cycle": _dead(parts, "dead_this_cycle"), "dead": _dead(parts, "dead"),
    }


def _dead(parts: Sequence[Mapping[str, Any]], key: str) -> list[list[str]]:
    found = sorted({(str(u), str(r)) for p in parts for u, r in p.get(key, [])})
    return [list(d) for d in found[:MAX_DEAD_LISTED]]


def _rate(info: Mapping[str, Any]) -> float:
    """Pages/s over the node's last complete interval (the one before the current)."""
    intervals = {int(k): int(v) for k, v in dict(info.get("intervals", {})).items()}
    interval_s = float(info.get("interval_s") or 0.0)
    if not interval_s:
        return 0.0
    now_k = int((float(info.get("wall", 0.0)) - float(info.get("epoch", 0.0))) // interval_s)
    return intervals.get(now_k - 1, 0) / interval_s


def status_text(members: Mapping[str, Mapping[str, Any]], table: BucketTable | None,
                counters: Mapping[str, int], crawl: str, coordinator: str | None = None) -> str:
    """What ``webgather cluster status`` prints (``coordinator``: the node holding the coordinator lease)."""
    owned = table.shares() if table is not None else {}
    lines = [f"crawl {crawl}: table v{table.version if table else '-'} over {table.n_buckets if table else '-'} buckets, "
             f"{len(members)} live node(s); runs {counters.get('runs', 0)}, done {counters.get('done', 0)}",
             f"coordinator: {coordinator}" if coordinator else "coordinator: none (no node holds the lease now)"]
    head = ("node", "state", "buckets", "pages", "pages/s", "queued", "in_flight", "msgs", "urls_sent", "bytes_sent",
            "cache_saved")
    rows: list[tuple[str, ...]] = [head]
    for node in sorted(set(members) | set(owned)):
        info = members.get(node)
        if info is None:
            rows.append((node, "missing", str(owned.get(node, 0)), *("-",) * 8))
            continue
        state = "leaving" if info.get("leaving") else "idle" if info.get("idle") else "busy"
        state += "" if info.get("applied") else " (handing over)"
        state += ", coordinator" if node == coordinator else ""
        rows.append((node, state, str(owned.get(node, 0)), str(info.get("pages", 0)), f"{_rate(info):.1f}",
                     *(str(info.get(k, 0)) for k in ("queued", "in_flight", "messages", "urls_sent", "bytes_sent",
                                                       "cache_saved"))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += _load_lines(members)
    extra = {k: v for k, v in counters.items() if k.startswith(("recovered", "unrecoverable", "buckets_started"))}
    if extra:
        lines.append("recovery: " + ", ".join(f"{k} {v}" for k, v in sorted(extra.items())))
    lost = {k: counters[k] for k in ("unrecoverable_buckets", "buckets_started_empty") if counters.get(k)}
    if lost:  # the same line every node prints (runtime.durability.losses)
        lines.append("DATA LOST: " + ", ".join(f"{k} {v}" for k, v in lost.items())
                     + " (buckets whose state could not be recovered after a node died)")
    return "\n".join(lines)


def _load_lines(members: Mapping[str, Mapping[str, Any]]) -> list[str]:
    per_node = {node: {int(k): int(v) for k, v in dict(info.get("intervals", {})).items()}
                for node, info in members.items()}
    rows = interval_load(per_node)[-10:]
    if not rows:
        return []
    interval_s = next((float(i.get("interval_s", 0)) for i in members.values()), 0.0)
    out = [f"load balance per {interval_s:g} s interval (normalized share per node, variance of shares):"]
    for row in rows:
        shares = " ".join(f"{n}={x:.3f}" for n, x in row["share"].items())
        out.append(f"  #{row['interval']:<5} pages {sum(row['pages'].values()):<7} {shares}  "
                   f"var_share {row['var_share']:.2e}")
    return out
