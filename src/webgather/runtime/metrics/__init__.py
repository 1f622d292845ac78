"""What a running node shows: Prometheus metrics (``node``, ``export``), the live progress panel
or log line (``progress``), and the status page's server over a cluster's Redis (``status_server``).
"""
