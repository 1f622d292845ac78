"""robots.txt: rules (RFC 9309, via protego) and per-host state. Pure (no IO, no clock).

Input: a robots.txt body (or the HTTP status that came instead) and our
User-Agent; ``now`` from the caller's clock. Output: :class:`RobotsRules`
(``allowed(url)``, ``crawl_delay_s``, ``sitemaps``) and the node's
:class:`RobotsGate`, which owns every host's robots state and answers each URL
with an action: allow, deny, wait, or fetch robots.txt first. Driven by
``runtime.engine.robots_driver`` (which does the fetching; ``runtime.engine.robots_fetch`` follows
the redirects); the synthetic web's ``closure`` uses :func:`is_allowed`.
"""

from __future__ import annotations

from webgather.robots.gate import Action, Allow, Dead, Deny, FetchRobots, RobotsGate, Wait, Waiting
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
    "Action",
    "Allow",
    "Dead",
    "Deny",
    "FetchRobots",
    "RobotsGate",
    "RobotsRules",
    "Wait",
    "Waiting",
    "is_allowed",
    "product_token",
    "rules_for_response",
]
