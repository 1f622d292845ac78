"""Runtime: the asyncio shell around the pure core.

Inputs: a frozen :class:`webgather.config.CrawlConfig`. Outputs: a running node.
``clock`` is the only module that reads the system time; ``node`` is the
composition root that wires seeds, router, seen-test, frontier, fetcher,
parser and archive together under one TaskGroup.
"""
