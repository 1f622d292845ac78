"""Which fetch results deserve another attempt, and when. Pure.

Transient (contract step 4): ``timeout``, ``reset``, ``truncated``, ``connect``,
``proxy_unreachable``, ``proxy_refused`` (a CONNECT answered 502/503/504 mostly),
any 5xx status and 429. Everything else (4xx, ``dns``, ``too_large``, ``bomb``,
``protocol``, ``invalid_url``, ``proxy_auth``) would fail the same way again.

``attempt`` counts the attempts before this one (``CrawlItem.attempt``: 0 on the
first try), so a URL gets at most ``1 + max_retries`` attempts.

``Retry-After`` (RFC 9110 section 10.2.3) is read on 429 and 503 only: either
delay-seconds or an HTTP-date, taken relative to ``now_wall`` and clamped to
``[0, max_s]``; an unreadable value counts as absent.
"""

from __future__ import annotations

from datetime import timezone
from email.utils import parsedate_to_datetime

from webgather.fetch.model import FetchResult

__all__ = [
    "RETRY_AFTER_STATUSES",
    "TRANSIENT_ERRORS",
    "is_transient",
    "parse_retry_after",
    "retry_after_s",
    "should_retry",
]

TRANSIENT_ERRORS = frozenset({"timeout", "reset", "truncated", "connect", "proxy_unreachable", "proxy_refused"})
RETRY_AFTER_STATUSES = frozenset({429, 503})
DEFAULT_RETRY_AFTER_MAX_S = 3600.0
"""The default clamp."""
MAX_DELAY_DIGITS = 12
"""A delay-seconds of more digits (over 30,000 years) is taken as the clamp without converting it:
``int`` of a 5,000-digit string raises ValueError."""


def is_transient(result: FetchResult) -> bool:
    """True if the same request may well succeed later."""
    if result.error in TRANSIENT_ERRORS:
        return True
    status = result.status
    return status is not None and (status >= 500 or status == 429)


def should_retry(result: FetchResult, attempt: int, max_retries: int) -> bool:
    """Retry ``result`` (the outcome of attempt number ``attempt``, from 0)?"""
    return attempt < max_retries and is_transient(result)


def retry_after_s(
    result: FetchResult, now_wall: float, *, max_s: float = DEFAULT_RETRY_AFTER_MAX_S
) -> float | None:
    """Seconds the server asked us to wait (429/503 with Retry-After), else None."""
    if result.status not in RETRY_AFTER_STATUSES:
        return None
    value = result.header("Retry-After")
    if value is None:
        return None
    return parse_retry_after(value, now_wall, max_s=max_s)


def parse_retry_after(value: str, now_wall: float, *, max_s: float = DEFAULT_RETRY_AFTER_MAX_S) -> float | None:
    """A Retry-After value in seconds from ``now_wall``, clamped to ``[0, max_s]``; None if unreadable."""
    text = value.strip()
    if text.isascii() and text.isdigit():  # digits past MAX_DELAY_DIGITS: more than any clamp, not converted
        return min(float(int(text)), max_s) if len(text) <= MAX_DELAY_DIGITS else max_s
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000" means UTC with no claim about the zone
        when = when.replace(tzinfo=timezone.utc)
    try:
        delay = when.timestamp() - now_wall
    except (OverflowError, OSError, ValueError):
        return None
    return min(max(delay, 0.0), max_s)
