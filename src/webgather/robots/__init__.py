"""robots.txt: rules (RFC 9309, via protego) and per-host state. Pure (no IO, no clock).

Input: a robots.txt body (or the HTTP status that came instead) and our
User-Agent; ``now`` from the caller's clock. Output: :class:`RobotsRules`
(``allowed(url)``, ``crawl_delay_s``, ``sitemaps``) and, per host, a
:class:`RobotsCache` state telling the fetch shell to obey known rules, fetch
robots.txt, wait, or give the host up. Called by ``runtime.robots`` (which does
the fetching and the redirects) and by the fetcher's per-URL check; the
synthetic web's ``closure`` uses :func:`is_allowed`.
"""

from __future__ import annotations

from webgather.robots.cache import (
    Backoff,
    GaveUp,
    Known,
    NeedFetch,
    Pending,
    RobotsCache,
    RobotsState,
)
from webgather.robots.parse import (
    ALLOW_ALL,
    DISALLOW_ALL,
    MAX_ROBOTS_BYTES,
    RobotsRules,
    is_allowed,
    product_token,
    rules_for_response,
)

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "MAX_ROBOTS_BYTES",
    "Backoff",
    "GaveUp",
    "Known",
    "NeedFetch",
    "Pending",
    "RobotsCache",
    "RobotsRules",
    "RobotsState",
    "is_allowed",
    "product_token",
    "rules_for_response",
]
