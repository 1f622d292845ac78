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
import typing

if typing.TYPE_CHECKING:
    from webgather.api import Crawl, CrawlSummary
    from webgather.config import CrawlConfig, load
    from webgather.errors import WebgatherError
    from webgather.urls import canonicalize, fingerprint, join
    from webgather.runtime.engine.item_sinks import ItemSink
    from webgather.runtime.engine.page_hooks import Link, Page

__all__ = [
    "Crawl", "CrawlConfig", "CrawlSummary", "ItemSink", "Link", "Page", "WebgatherError", "__version__", "canonicalize",
    "fingerprint", "join", "load",
]

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

_LAZY = {"Crawl": "webgather.api", "CrawlSummary": "webgather.api", "ItemSink": "webgather.runtime.engine.item_sinks",
         "Link": "webgather.runtime.engine.page_hooks",
         "Page": "webgather.runtime.engine.page_hooks", "CrawlConfig": "webgather.config", "load": "webgather.config",
         "WebgatherError": "webgather.errors", "canonicalize": "webgather.urls", "fingerprint": "webgather.urls",
         "join": "webgather.urls"}
"""Exported on first use: importing them loads the whole crawler (or numpy, for the URL functions), which
``import webgather`` (a parser process, a command that only reads a crawl, the command line's entry before
it handles SIGTERM: :mod:`webgather._entry`) need not pay for."""


def __getattr__(name: str) -> typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'webgather' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
