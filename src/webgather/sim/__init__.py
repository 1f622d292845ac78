"""The simulator: the documents' experiments replayed on a link graph or a URL trace.

Inputs: a :class:`webgather.linkgraph.LinkGraph` (from the synthetic web,
``webgather.testweb``, or a crawl's link log, ``webgather.store.linklog``), a
URL trace (``uint64`` fingerprints in discovery order, see :mod:`.traces`),
parameters and a seed. Outputs: frozen result records, a text table per
experiment (``table(result) -> str``) and a plot per experiment drawn onto a
matplotlib ``Axes`` the caller supplies (``plot(result, ax)``).

Modules, all pure (no files, sockets or clock; randomness from a seeded
``numpy.random.Generator``), vectorized with numpy where the work is per link:

* :mod:`.traces`     adjacency (CSR), breadth-first crawl order, URL traces
* :mod:`.partition`  partition strategies: load variance, cross-URL traffic, URLs moved on join/leave
* :mod:`.cache`      URL-cache policies vs size (random, static, LRU, CLOCK, clairvoyant, infinite)
* :mod:`.order`      crawl orderings (BFS, OPIC, in-degree, PageRank oracle) by PageRank collected
* :mod:`.crawl`      discrete-event simulation of the distributed crawl: pages over time, speed-up
* :mod:`.gnp_sched`  GNP accuracy and Random/Top1/Top3 site assignment on a synthetic latency model

Called by ``webgather.commands.simulate`` (``webgather simulate ...``), which
loads the graph, prints the tables and saves the PNGs, and by ``bench/sim_speed.py``.
"""
