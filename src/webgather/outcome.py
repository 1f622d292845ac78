"""What to do with one fetch result. Pure.

The pipeline asks :func:`decide` and then only carries the decision out, so
the rules of docs/contracts.md ("What a crawl does with each URL") live here,
testable without a network: retry or not, redirect target or loop, parse as a
page, as a sitemap, or not at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from webgather.config import CrawlConfig
from webgather.fetch.model import FetchResult
from webgather.fetch.redirects import REDIRECT_STATUSES, redirect_target
from webgather.fetch.retry import is_transient, retry_after_s
from webgather.frontier.model import CrawlItem

__all__ = ["Decision", "decide"]



@dataclass(frozen=True, slots=True)
class Decision:
    retry: bool = False
    """Requeue the item (attempt + 1) instead of recording a final fetch."""
    redirect_to: str | None = None
    """Canonical redirect target to route as a new URL."""
    error: str | None = None
    """Final error kind for the crawl log (may add to the fetch's own)."""
    parse: str | None = None
    """"page" or "sitemap" when the body is to be parsed."""
    host_error: bool = False
    """The host misbehaved (5xx, 429, network): back it off."""
    retry_after_s: float | None = None
    """For retries and for the host: the server's Retry-After (429/503, clamped to
    ``retry_after_max_s``); None when it sent none (a value of 0 is kept: "now")."""
    retry_in_s: float = 0.0
    """For retries: how long the URL itself waits before its next attempt: the server's
    Retry-After when it sent one, else ``backoff_base_s * 2**attempt`` capped at ``backoff_max_s``
    (its host meanwhile goes on with its other URLs: see :mod:`webgather.frontier.policy`)."""


def decide(item: CrawlItem, result: FetchResult, config: CrawlConfig, now_wall: float) -> Decision:
    """The contract's rules for one result of one attempt of ``item``."""
    status, error = result.status, result.error
    transient = is_transient(result)
    limit_s = config.politeness.retry_after_max_s
    after_s = retry_after_s(result, now_wall, max_s=math.inf)
    if after_s is not None and after_s > limit_s:
        # waiting that long would hold the URL, its host and the crawl's end: give the URL up, and
        # hold its host no longer than the limit
        return Decision(error=error or "retry_after", host_error=True, retry_after_s=limit_s)
    if transient and item.attempt < config.fetch.max_retries:
        return Decision(retry=True, error=error, host_error=True, retry_after_s=after_s,
                        retry_in_s=_retry_in_s(item.attempt, after_s, config))
    if status in REDIRECT_STATUSES and error is None:
        return _redirect(item, result, config)
    parse = None
    if error is None and status is not None and 200 <= status < 300:
        if item.kind == "sitemap":
            parse = "sitemap"
        elif result.content_type in config.fetch.parse_content_types:
            parse = "page"
    return Decision(error=error, parse=parse, host_error=transient, retry_after_s=after_s)


def _retry_in_s(attempt: int, after_s: float | None, config: CrawlConfig) -> float:
    if after_s is not None:
        return after_s
    politeness = config.politeness
    return float(min(politeness.backoff_base_s * 2.0 ** min(attempt, 62), politeness.backoff_max_s))


def _redirect(item: CrawlItem, result: FetchResult, config: CrawlConfig) -> Decision:
    target = redirect_target(result)
    if target is None:
        return Decision(error="bad_redirect")
    if target == item.url or item.redirects + 1 > config.fetch.max_redirects:
        return Decision(error="redirect_loop")
    return Decision(redirect_to=target)
