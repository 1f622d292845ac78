"""The synthetic web: a deterministic web of any size, its expected crawl, and a server.

Inputs: :class:`WebParams` (seed, sizes, degree laws, fault rates, change
rates). Outputs:

* :class:`WebModel` (``graph.py``, pure): ``page(url, now_s) -> Response``,
  the answer at any URL with its ground truth (``follow_links``, ``location``,
  ``fault``); ``robots(host)``, ``sitemap(host)``, ``resolve_lines()``;
  ``link_graph()`` -> :class:`webgather.linkgraph.LinkGraph` for analysis and
  simulation.
* :func:`closure` / :func:`crawl_outcomes` (``closure.py``, pure): the exact
  fetched set and per-URL crawl-log outcome of a correct crawl from given
  seeds under a :class:`~webgather.config.CrawlConfig`, without HTTP.
* :class:`TestWebServer` (``server.py``, IO): the model on loopback
  (127.0.x.y, one port, virtual hosts), recording every request
  (:class:`RequestRecord`) so tests can check politeness.

Callers: crawler integration tests and benchmarks (serve, crawl, compare the
crawl log with :func:`crawl_outcomes`), the analysis and simulation parts
(``link_graph()``), the GNP experiments (:class:`LatencyModel`), and the
``webgather testweb`` command (``webgather.commands.testweb``).
"""

from __future__ import annotations

from webgather.testweb.closure import ClosureResult, Expected, RobotsExpected, closure, crawl_outcomes, expected_fetch
from webgather.testweb.graph import WebModel
from webgather.testweb.latency import LatencyModel
from webgather.testweb.params import FaultRates, WebParams, crawl_config_for
from webgather.testweb.records import RequestRecord, max_in_flight, min_gaps
from webgather.testweb.response import Response
from webgather.testweb.server import TestWebServer

__all__ = [
    "ClosureResult",
    "Expected",
    "FaultRates",
    "LatencyModel",
    "RequestRecord",
    "Response",
    "RobotsExpected",
    "TestWebServer",
    "WebModel",
    "WebParams",
    "closure",
    "crawl_config_for",
    "crawl_outcomes",
    "expected_fetch",
    "max_in_flight",
    "min_gaps",
]
