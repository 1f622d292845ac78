"""webgather: a distributed, polite, resumable web crawler.

Data flows one way: seeds -> router -> seen-test -> frontier -> fetcher ->
parser -> archive, and the parser's links go back to the router. Pure logic
(URLs, robots rules, politeness scheduling, partitioning, wire encoding,
re-crawl policy, the synthetic web) takes values and ``now``; IO lives in thin
shells (``runtime``, ``fetch``, ``store``, ``cluster``, ``testweb.server``).

Diagnostics go to the ``webgather`` logger (``logging``), which has only a
``NullHandler`` until the program configures logging: importing and using the
package prints nothing (see :mod:`webgather.logs` for the command line's setup).
"""

from __future__ import annotations

import logging

from webgather.config import CrawlConfig, load
from webgather.errors import WebgatherError
from webgather.urls import canonicalize, fingerprint, join

__all__ = ["CrawlConfig", "WebgatherError", "__version__", "canonicalize", "fingerprint", "join", "load"]

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())
