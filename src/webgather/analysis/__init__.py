"""What did we collect? Web-structure, community and load analysis of a crawl.

Inputs: a crawl directory (one node, or a cluster's ``DIR/nodes/*``): its
link log as a :class:`webgather.linkgraph.LinkGraph` (read by
:func:`webgather.store.graphread.read_link_graph`) and its crawl logs (read by
:func:`webgather.store.crawllog.read_crawl_log`); or a ``LinkGraph`` built
directly (the synthetic web, ``bench/analysis_scale.py``). Outputs: an
:class:`Analysis` record with every figure, a one-page text summary,
``report.json``, PNG plots and a self-contained ``report.html``.

Called by ``webgather.commands.analyze`` (``webgather analyze DIR``) and by
``bench/analysis_scale.py``.

Modules: pure figures over numpy/scipy arrays (no Python loop over links):
:mod:`.graphops` (distinct-link CSR, BFS), :mod:`.totals`, :mod:`.degrees`
(effective in-degree, power-law fits), :mod:`.bowtie`, :mod:`.paths`,
:mod:`.ranking` (PageRank, HITS, host graph), :mod:`.trawl` (bipartite
cores), :mod:`.load` (per-node share variance), :mod:`.fetchlog` (crawl-log
entries as arrays), :mod:`.run` (all stages); presentation:
:mod:`.report` (JSON, text), :mod:`.plots` (PNG), :mod:`.html`; the IO
shell: :mod:`.crawldir`.
"""

from __future__ import annotations

from webgather.analysis.crawldir import load_crawl, write_report
from webgather.analysis.fetchlog import FetchTable, fetch_table
from webgather.analysis.report import summary_text, to_json
from webgather.analysis.run import Analysis, AnalysisOptions, analyze

__all__ = [
    "Analysis",
    "AnalysisOptions",
    "FetchTable",
    "analyze",
    "fetch_table",
    "load_crawl",
    "summary_text",
    "to_json",
    "write_report",
]
