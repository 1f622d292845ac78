"""Re-crawl cycles: the steps both runners share (``steps``: plan, queue, the summary section) and
the crawl-wide cycle of a cluster (``cluster``).
"""
