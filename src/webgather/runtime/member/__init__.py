"""Being one node of a cluster crawl: the node around the engine (``node``), its buckets received
and handed off (``buckets``), its lease and fence (``fence``), what it publishes (``figures``), and
the crawl-wide page permits and cycle budget it draws from (``permits``, ``budget``).
"""
