"""Incremental re-crawl: keep a crawled collection fresh at a fraction of the cost.

Data flow. Every final fetch of a node passes through :class:`~.hooks.RecrawlHooks`
(installed in :class:`~webgather.runtime.engine.node.CrawlNode`): it sends the
page's validators (If-None-Match, If-Modified-Since), turns a 304 or a 200
whose payload digest is unchanged into a WARC revisit record pointing at the
original response, computes a SimHash of changed text and looks it up for
near-duplicates, and records the visit in the node's per-URL state
(:mod:`.state`, ``DIR/state/urls.sqlite``): validators, digest, SimHash, the
history of (interval, changed) observations, the change-rate estimate
(:mod:`.estimate`), dead marks. A cycle (:mod:`webgather.runtime.cycle.steps`) reads that state,
lets a revisit policy (:mod:`.policy`) pick the pages due under the cycle's
fetch budget, queues them in the frontier past its seen-test, and runs the
node; never-seen URLs share the budget; robots.txt answers are reused
across cycles for ``robots.ttl_s``. Each cycle's summary reports its
counters, the dead pages and an estimated freshness of the collection. A crawl made without re-crawl state
is imported from its crawl log and archive (:mod:`.bootstrap`). In a
cluster each node keeps the rows of the buckets it owns; they travel with a
bucket as :mod:`.rows` (see ``webgather.runtime.cycle.cluster``). Pure:
estimate, policy, simhash, observe, rows. IO: state, hooks, bootstrap (the cycle itself runs the node: ``webgather.runtime.cycle.steps``).
"""
