"""Fetching: one HTTP request per call, bounded in time and bytes.

Input: a canonical URL (from the frontier, after the robots check) and the
address to connect to. Output: a :class:`webgather.fetch.model.FetchResult`;
redirects are results, never followed inline, so their targets go back through
the router and the seen-test like any link. Called by ``runtime``.
"""
