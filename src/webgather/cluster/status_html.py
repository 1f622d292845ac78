"""The status page's HTML: one self-contained document, no script, no external asset. Pure.

It refreshes itself with ``<meta http-equiv="refresh">`` (every ``refresh_s``
seconds): the server renders the whole page from Redis on each request, so
there is nothing for a script to do. Every value from the cluster is escaped
(node ids and hosts come from the nodes' heartbeats).
"""

from __future__ import annotations

import time
from html import escape

from webgather.cluster.status_model import ClusterStatus, HostRow, NodeRow
from webgather.cluster.status_svg import line_chart

__all__ = ["RATE_COLOUR", "VARIANCE_COLOUR", "render_page"]

RATE_COLOUR = "#1f6feb"
"""The pages/s line: used nowhere else on the page (a screenshot test looks for it)."""
VARIANCE_COLOUR = "#6f42c1"

STYLE = """
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:20px 28px;color:#24292e;background:#f6f8fa}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 8px}
.sub{color:#586069;margin-bottom:14px}
.card{background:#fff;border:1px solid #d1d5da;border-radius:6px;padding:10px 14px;margin-bottom:12px}
.row{display:flex;gap:14px;flex-wrap:wrap}.row>.card{flex:1;min-width:320px;overflow:hidden}
table{border-collapse:collapse;width:100%}th,td{padding:3px 8px;text-align:right;white-space:nowrap}
th{border-bottom:2px solid #d1d5da;font-weight:600}td{border-bottom:1px solid #eaecef}
th:first-child,td:first-child{text-align:left}
.figs{display:flex;gap:28px;flex-wrap:wrap}.fig b{display:block;font-size:22px}.fig span{color:#586069}
.alive{color:#22863a;font-weight:600}.missing{color:#cb2431;font-weight:600}
.lost{background:#ffeef0;border:2px solid #cb2431;color:#86181d;font-weight:600}
.bar{display:inline-block;height:10px;background:#79b8ff;border-radius:2px;vertical-align:middle}
.bar.err{background:#d73a49}.note{color:#586069;font-size:12px}
"""


def render_page(status: ClusterStatus, refresh_s: float) -> str:
    """The whole page for ``status``, refreshing itself every ``refresh_s`` seconds."""
    title = f"webgather: crawl {status.crawl}"
    return "".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="refresh" content="{refresh_s:g}">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>", _subtitle(status), _losses(status), _figures(status), _nodes(status.nodes),
        _charts(status),
        '<div class="row">', _errors(status.errors), _hosts(status.busiest), "</div>",
        f'<p class="note">Refreshes every {refresh_s:g} s; the same figures as JSON at '
        '<a href="/status.json">/status.json</a>.</p></body></html>',
    ])


def _subtitle(status: ClusterStatus) -> str:
    table = (f"table v{status.table_version} over {status.n_buckets} buckets" if status.table_version is not None
             else "no bucket table yet")
    state = "finished" if status.finished else "running" if status.runs else "not started"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(status.now))
    alive = sum(1 for n in status.nodes if n.alive)
    if status.ended:
        return (f'<div class="sub">{state}: the crawl has ended; its last state, from {escape(status.ended)}; '
                f"as of {stamp}</div>")
    return (f'<div class="sub">{table}; {alive} live node(s); {state} (runs {status.runs}, done {status.done}); '
            f"as of {stamp}</div>")


def _losses(status: ClusterStatus) -> str:
    if not status.losses:
        return ""
    what = ", ".join(f"{escape(k)} {n}" for k, n in status.losses)
    return (f'<div class="card lost">DATA LOST: {what}: buckets whose state could not be recovered after a node '
            "died (their queued URLs are not crawled unless found again; pages fetched before may be fetched "
            "twice).</div>")


def _figures(status: ClusterStatus) -> str:
    var_last = f"{status.var_share_last:.2e}" if status.var_share_last is not None else "-"
    var_mean = f"{status.var_share_mean:.2e}" if status.var_share_mean is not None else "-"
    counted = sum(1 for p in status.history if p.var_share is not None)
    figs = [(f"{status.pages:,}", "pages (live nodes)"), (f"{status.pages_per_s:,.1f}", "pages/s, last interval"),
            (var_last, "load variance, last interval"), (var_mean, f"mean over {counted} intervals")]
    figs += [(str(n), escape(k)) for k, n in status.recovery if (k, n) not in status.losses]
    inner = "".join(f'<div class="fig"><b>{value}</b><span>{label}</span></div>' for value, label in figs)
    return f'<div class="card figs">{inner}</div>'


def _nodes(nodes: tuple[NodeRow, ...]) -> str:
    head = ("node", "alive", "state", "buckets", "pages", "pages/s", "queued", "in flight", "heartbeat age")
    rows = []
    for n in nodes:
        alive = '<span class="alive">yes</span>' if n.alive else '<span class="missing">missing</span>'
        age = f"{n.heartbeat_age_s:.1f} s" if n.heartbeat_age_s is not None else "-"
        cells = (escape(n.node), alive, escape(n.state), str(n.buckets), f"{n.pages:,}", f"{n.pages_per_s:,.1f}",
                 f"{n.queued:,}", f"{n.in_flight:,}", age)
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    body = "".join(rows) or f'<tr><td colspan="{len(head)}">no node has a heartbeat or owns buckets</td></tr>'
    return (f'<div class="card"><h2>Nodes</h2><table><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>'
            f"{body}</table></div>")


def _charts(status: ClusterStatus) -> str:
    interval = f"{status.interval_s:g} s" if status.interval_s else "-"
    rate = line_chart([(p.start_s, p.pages_per_s) for p in status.history], title="pages per second",
                      colour=RATE_COLOUR,
                      x_label="seconds since the crawl started", y_label="pages/s", width=540, height=210,
                      empty_text="no complete load interval yet")
    var = line_chart([(p.start_s, p.var_share) for p in status.history if p.var_share is not None],
                     title="load variance", x_label="seconds since the crawl started", y_label="variance of shares",
                     colour=VARIANCE_COLOUR, width=540, height=210, empty_text="fewer than two nodes with pages")
    return (f'<div class="row"><div class="card"><h2>Pages per second (live nodes, {interval} intervals)</h2>{rate}'
            '</div><div class="card"><h2>Load variance (of the nodes\' shares of each interval)</h2>'
            f"{var}</div></div>")


def _errors(errors: tuple[tuple[str, int], ...]) -> str:
    top = max((n for _, n in errors), default=1)
    rows = "".join(f'<tr><td>{escape(kind)}</td><td>{n:,}</td><td style="width:45%;text-align:left">'
                   f'<span class="bar err" style="width:{100 * n / top:.1f}%"></span></td></tr>'
                   for kind, n in errors)
    return (f'<div class="card"><h2>Errors by kind</h2><table><tr><th>kind</th><th>count</th><th></th></tr>'
            f'{rows or "<tr><td colspan=3>none</td></tr>"}</table></div>')


def _hosts(hosts: tuple[HostRow, ...]) -> str:
    top = max((h.pages for h in hosts), default=1)
    rows = "".join(f'<tr><td>{escape(h.host)}</td><td>{"&le; " if h.overcount else ""}{h.pages:,}</td>'
                   f'<td style="width:45%;text-align:left"><span class="bar" style="width:{100 * h.pages / top:.1f}%">'
                   "</span></td></tr>" for h in hosts)
    return (f'<div class="card"><h2>Busiest hosts (pages fetched)</h2><table><tr><th>host</th><th>pages</th>'
            f'<th></th></tr>{rows or "<tr><td colspan=3>none yet</td></tr>"}</table></div>')
