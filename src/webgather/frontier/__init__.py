"""The frontier: seen-test, per-host queues and politeness scheduling of one node.

Input: CrawlItems from the router (new links, seeds, redirect targets) for the
buckets this node owns. Output: the next CrawlItem whose host may be fetched
now, or the time to wake. Only this package decides whether a URL is new and
when it may be fetched. Called by ``runtime``; calls nothing downstream.
"""
