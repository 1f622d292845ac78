"""Fetching robots.txt for a host: one fetch with its redirects, for ``runtime.engine.robots_driver``.

A host's URLs wait (the frontier defers the host) until its robots.txt is
known. Redirects are followed here, up to 5 hops (RFC 9309 section 2.3.1.2).
4xx and redirect trouble (no usable Location, more than 5 hops) mean allow
all; 5xx, 429 and network errors mean "disallow for now": the host stays
deferred and the fetch is retried on the gate's schedule (a refused connection
soon and few times, the others on ``robots.error_retry_s`` growing by
``robots.retry_factor``: :mod:`webgather.robots.gate`), then the host's queued
URLs are dropped with crawl-log error ``robots_unavailable``. A host that does
not resolve is dropped at once with error ``dns`` (retrying DNS for minutes
helps nobody), and so is one at an address the destination guard refuses
(``forbidden_address``).

Every request, the first and each redirect hop, is preceded by ``before(url)``:
the driver books the politeness turn of the URL's host there (the host's own
clock, or a redirect target's, so many hosts redirecting to one hub do not
flood it). Each is followed by ``after(url)`` once it ended: the next turn counts from that
end, as after any request, so a slow answer does not shorten the gap before the next hop.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from webgather.fetch.model import FetchResult
from webgather.fetch.redirects import REDIRECT_STATUSES
from webgather.robots.parse import ALLOW_ALL, RobotsRules, rules_for_response
from webgather.urls import resolve_link

__all__ = ["RobotsOutcome", "fetch_robots"]

MAX_ROBOTS_REDIRECTS = 5
_CUT_ERRORS = frozenset({"too_large", "bomb"})
"""Fetch errors of a complete 2xx answer whose body was only cut short by our own limits."""


@dataclass(frozen=True, slots=True)
class RobotsOutcome:
    rules: RobotsRules | None
    """Rules to obey, or None when robots.txt could not be had (disallow for now)."""
    results: tuple[FetchResult, ...]
    """Every request made, for the crawl log and the archive."""
    host_error: str | None = None
    """"dns" or "forbidden_address": the host can never be fetched; drop its URLs with this error."""


async def fetch_robots(
    origin: str,
    fetch: Callable[[str], Awaitable[FetchResult]],
    user_agent: str,
    max_bytes: int,
    before: Callable[[str], Awaitable[None]] | None = None,
    after: Callable[[str], None] | None = None,
) -> RobotsOutcome:
    """Fetch ``origin + /robots.txt`` following redirects; classify per RFC 9309.

    ``before(url)`` is awaited before each request and ``after(url)`` called once it ended
    (politeness: see the module docstring).
    """
    url = origin + "/robots.txt"
    results: list[FetchResult] = []
    for _hop in range(MAX_ROBOTS_REDIRECTS + 1):
        if before is not None:
            await before(url)
        result = await fetch(url)
        if after is not None:
            after(url)
        results.append(result)
        status = result.status
        if result.error in _CUT_ERRORS and status is not None and 200 <= status < 300:
            return RobotsOutcome(_from_prefix(result, user_agent, max_bytes), tuple(results))
        if result.error is not None or status is None:
            return RobotsOutcome(None, tuple(results), host_error=_host_error(result.error))
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


def _from_prefix(result: FetchResult, user_agent: str, max_bytes: int) -> RobotsRules | None:
    """Rules from the first bytes of a body cut by our size limits; None if they cannot be decoded."""
    coding = (result.header("Content-Encoding") or "identity").strip().lower()
    if coding == "identity":
        return _whole_lines(result, result.raw_body[: max_bytes + 1], user_agent, max_bytes)
    if coding not in ("gzip", "x-gzip", "deflate"):
        return None
    for wbits in (47, -15):  # gzip or zlib framing (auto-detected), then the raw deflate some servers send
        try:
            prefix = zlib.decompressobj(wbits).decompress(result.raw_body, max_bytes + 1)
        except zlib.error:
            continue
        return _whole_lines(result, prefix, user_agent, max_bytes)
    return None


def _whole_lines(result: FetchResult, prefix: bytes, user_agent: str, max_bytes: int) -> RobotsRules | None:
    # the prefix ends where a limit cut it: a half-read last line is dropped, never obeyed
    return rules_for_response(result.status, prefix[: prefix.rfind(b"\n") + 1], user_agent, max_bytes)


def _host_error(error: str | None) -> str | None:
    return error if error in ("dns", "forbidden_address") else None
