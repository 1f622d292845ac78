"""The frontier: seen-test, per-host queues and politeness scheduling of one node.

Input: CrawlItems from the router (new links, seeds, redirect targets) for the
buckets this node owns, plus fetch outcomes (``complete``/``retry``) and host
facts (robots Crawl-delay, IP address, deferrals). Output: the next CrawlItem
whose host may be fetched now, or the time to wake; bucket states for the
cluster hand-off. Only this package decides whether a URL is new and when it
may be fetched. Called by ``runtime`` (the node) and ``cluster`` (hand-off);
calls nothing downstream (no fetch, parse, store or cluster imports).

Modules: ``frontier`` (the :class:`~webgather.frontier.frontier.Frontier` the
node uses), ``seen`` (SeenSet protocol, MemorySeen, CachedSeen, seen keys),
``seen_disk`` (DiskSeen run files), ``policy`` (pure politeness ready-heap),
``queues`` (HostQueues protocol, MemoryQueues), ``queues_sqlite`` (persistent
queues), ``store``/``journal``/``persist`` (SQLite state, redo journal,
open/checkpoint/resume), ``bucket`` (BucketState), ``model`` (CrawlItem),
``cash`` (OPIC cash of queued URLs), ``live`` (re-keying items in a heap).
"""
