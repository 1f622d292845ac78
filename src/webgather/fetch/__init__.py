"""Fetching: one HTTP request per call, bounded in time and bytes.

Input: a canonical URL (from the frontier, after the robots check) and optional
extra request headers (e.g. ``If-None-Match`` on a re-crawl). Output: a
:class:`webgather.fetch.model.FetchResult`, never an exception for network or
HTTP trouble (the failure is its ``error`` kind). Redirects are results, never
followed inline, so their targets go back through the router and the seen-test
like any link. Called by ``runtime`` (the node's fetch workers, robots.txt too).

Modules:

* ``model``: :class:`FetchResult` (pure, shared with testweb and the archive).
* ``resolver``: host -> address: static ``resolve_file`` map, then DNS through
  the event loop, cached with a TTL and negative caching (:class:`Resolver`).
* ``http``: :class:`HttpClient`; connects to the resolver's address, keeps
  Host/SNI, over one of two transports: ``h1_client`` (default; our HTTP/1.1
  connections, ``h1_conn``, over the pure ``h1`` wire format) or
  ``via_aiohttp`` (aiohttp's client). Each maps its errors in one place.
* ``request`` (pure): the URL taken apart for the wire, the request headers as
  sent, the response as it arrives (``Draft``).
* ``decode`` (pure): Content-Encoding removal under ``max_decoded_bytes``.
* ``retry`` (pure): which results are transient; Retry-After parsing.
* ``redirects`` (pure): the target a 3xx points to.
"""
