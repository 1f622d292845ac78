"""Which node owns a host: host addresses shared for ``--partition-by ip`` (``addresses``), the
frontier whose buckets follow that key (``frontier``), and network-aware placement for
``--partition-by gnp`` (``gnp``, with the measuring loop in ``gnp_probe``).
"""
