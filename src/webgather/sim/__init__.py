"""The simulator: the documents' experiments replayed on a link graph or a URL trace.

Inputs: a :class:`webgather.linkgraph.LinkGraph` (from the synthetic web,
``webgather.testweb``, or a crawl's link log, ``webgather.store.linklog``), a
URL trace (``uint64`` fingerprints in discovery order, see :mod:`.traces`),
parameters and a seed. Outputs: frozen result records, a text table per
experiment (``table(result) -> str``) and a plot per experiment drawn onto a
matplotlib ``Axes`` the caller supplies (``plot(result, ax)``).

Modules, all pure (no files, sockets or clock; randomness from a seeded
``numpy.random.Generator``), vectorized with numpy where the work is per link:

* :mod:`.traces`     adjacency (CSR), breadth-first crawl order, URL traces; a recorded crawl's order
* :mod:`.partition`  partition strategies: load variance, cross-URL traffic
* :mod:`.reconfig`   URLs and state moved on a join/leave: mod N, sites table, two-stage, consistent
* :mod:`.cache`      URL-cache policies vs size (random, static, LRU, CLOCK, clairvoyant, infinite)
* :mod:`.order`      crawl orderings (BFS, OPIC, in-degree, PageRank oracle) by PageRank collected
* :mod:`.des`        the discrete-event simulation of a distributed crawl (one run)
* :mod:`.crawl`      DES runs for 1..n nodes: pages over time, speed-up, where scaling stops
* :mod:`.gnp_sched`  GNP accuracy and Random/Top1/Top3 site assignment on a synthetic latency model
* :mod:`.tables`     plain-text tables

``docs/reproducing.md`` has the commands and the results next to the documents' figures.

Called by ``webgather.commands.simulate`` (``webgather simulate ...``), which
loads the graph, prints the tables and saves the PNGs, and by ``bench/sim_speed.py``.
"""
