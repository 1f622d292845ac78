"""Runtime: the asyncio shell around the pure core, split by job into layered subpackages.

Inputs: a frozen :class:`webgather.config.CrawlConfig`. Outputs: a running node.

- ``launch``: every path that starts a crawl (crawl, ``--redis``, ``--workers``, node, recrawl, API).
- ``member``: one node of a cluster crawl around the engine (buckets, lease, figures, permits).
- ``durability`` | ``partition`` | ``cycle`` | ``metrics``: checkpoints and recovery; which node owns
  a host; re-crawl cycles; what a node shows.
- ``engine``: one node's page engine; ``engine.node`` is the composition root that wires seeds,
  router, seen-test, frontier, fetcher, parser and archive together under one TaskGroup.

A layer imports only layers below it (``pyproject.toml``, checked by ``tests/unit/test_layers.py``).
"""
