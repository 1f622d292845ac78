"""Being one node of a cluster crawl: the node around the engine (``node``), its buckets received
and handed off (``buckets``), its lease and fence (``fence``), the gate every page and request
passes (``page_gate``: lease, ownership, page limits), what it publishes (``figures``), and the
crawl-wide page permits and cycle budget it draws from (``permits``, ``budget``).
"""
