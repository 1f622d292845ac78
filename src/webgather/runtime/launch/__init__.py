"""Starting crawls: the one launcher every path goes through (``start``), a crawl on this machine
(``crawl``), a cluster crawl started, joined or run as one node (``cluster``), and ``--workers N``
node processes with their merged summary (``workers``). The top of the runtime: nothing below imports it.
"""
