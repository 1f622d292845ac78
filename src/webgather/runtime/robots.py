"""Fetching robots.txt for a host: the IO shell around ``robots.cache``.

A host's URLs wait (the frontier defers the host) until its robots.txt is
known. Redirects are followed here, up to 5 hops (RFC 9309 section 2.3.1.2).
4xx means allow all; 5xx, network errors and redirect trouble mean "disallow
for now": the host stays deferred and the fetch is retried after
``robots.error_retry_s``; after the cache gives up, the host's queued URLs are
dropped with crawl-log error ``robots_unavailable``. A host that does not
resolve is dropped at once with error ``dns`` (retrying DNS for ten minutes
helps nobody).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from webgather.fetch.model import FetchResult
from webgather.fetch.redirects import REDIRECT_STATUSES
from webgather.robots.parse import ALLOW_ALL, RobotsRules, rules_for_response
from webgather.urls import resolve_link

__all__ = ["RobotsOutcome", "fetch_robots"]

MAX_ROBOTS_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class RobotsOutcome:
    rules: RobotsRules | None
    """Rules to obey, or None when robots.txt could not be had (disallow for now)."""
    results: tuple[FetchResult, ...]
    """Every request made, for the crawl log and the archive."""
    dns_failed: bool = False


async def fetch_robots(
    origin: str,
    fetch: Callable[[str], Awaitable[FetchResult]],
    user_agent: str,
    max_bytes: int,
    hop_delay_s: float = 0.0,
) -> RobotsOutcome:
    """Fetch ``origin + /robots.txt`` following redirects; classify per RFC 9309.

    Redirect hops are ``hop_delay_s`` apart: they are requests like any other.
    """
    url = origin + "/robots.txt"
    results: list[FetchResult] = []
    for hop in range(MAX_ROBOTS_REDIRECTS + 1):
        if hop and hop_delay_s > 0:
            await asyncio.sleep(hop_delay_s)
        result = await fetch(url)
        results.append(result)
        status = result.status
        if result.error is not None or status is None:
            return RobotsOutcome(None, tuple(results), dns_failed=result.error == "dns")
        if status in REDIRECT_STATUSES:
            location = result.header("Location")
            target = resolve_link(url, location) if location else None
            if target is None:
                return RobotsOutcome(_allow_all(user_agent), tuple(results))
            url = target
            continue
        return RobotsOutcome(_classify(result, user_agent, max_bytes), tuple(results))
    return RobotsOutcome(_allow_all(user_agent), tuple(results))


def _classify(result: FetchResult, user_agent: str, max_bytes: int) -> RobotsRules | None:
    return rules_for_response(result.status, result.body, user_agent, max_bytes)


def _allow_all(user_agent: str) -> RobotsRules:
    return ALLOW_ALL
