"""What one visit of a URL means for its re-crawl record. Pure.

:class:`UrlRecord` is what a node keeps per URL it fetched (the state store
saves it). For each final fetch the hooks ask :func:`store_mode` how to
archive it, then :func:`after_fetch` (or :func:`after_unfetched` when no
request was made) for the record's next value:

* a 304 to a conditional request of a page whose original response is
  archived: a ``server-not-modified`` revisit record, no change seen;
* a response with the same status and payload digest as the original: an
  ``identical-payload-digest`` revisit record, no change seen;
* anything else with a response: a new response record; a change is seen when
  status or digest differ from the record's (the first visit sees nothing);
* no response (network error after the retries): nothing is learnt about change.

A page answering 404 or 410, or whose host does not resolve, on
``dead_after_failures`` visits in a row is *dead*: it leaves the active set
(never planned again) and the cycle's summary lists it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Literal

from webgather.fetch.model import FetchResult
from webgather.recrawl.estimate import Observation, estimate_rate
from webgather.store.warc import ArchiveRef

__all__ = [
    "GONE_STATUSES",
    "StoreMode",
    "UrlRecord",
    "after_fetch",
    "after_unfetched",
    "conditional_headers",
    "content_age_s",
    "store_mode",
]

StoreMode = Literal["fetch", "server-not-modified", "identical-payload-digest"]
GONE_STATUSES = frozenset({404, 410})
DEATH_ERRORS = frozenset({"dns"})


@dataclass(frozen=True, slots=True)
class UrlRecord:
    """The re-crawl state of one URL at its owning node."""

    fp: int
    url: str
    kind: str = "page"
    depth: int = 0
    first_fetch_s: float = math.nan
    last_fetch_s: float = math.nan
    """Wall time of the last visit that got a response."""
    last_change_s: float = math.nan
    """Wall time of the visit that first saw the current content."""
    status: int | None = None
    """Status of the archived original (a 304 keeps the original's)."""
    etag: str | None = None
    last_modified: str | None = None
    digest: str | None = None
    """``sha1:<BASE32>`` payload digest of the archived original."""
    simhash: int | None = None
    original: ArchiveRef | None = None
    """The response record later revisit records refer to."""
    links_digest: str | None = None
    visits: int = 0
    changes: int = 0
    history: tuple[Observation, ...] = ()
    """The last (interval_s, changed) observations, oldest first."""
    rate_per_s: float = 0.0
    """:func:`~webgather.recrawl.estimate.estimate_rate` of ``history``."""
    failures: int = 0
    """Consecutive 404/410/DNS-failure visits."""
    dead: str | None = None
    """Why the page is dead ("404", "410", "dns"), or None while active."""
    dead_cycle: int | None = None
    near_dup_of: str | None = None
    pending_cycle: int | None = None
    """The cycle whose revisit of this URL is queued and not done yet."""
    first_age_s: float | None = None
    """Age of the content at the first visit (fetch time - Last-Modified): a prior for the rate."""


def conditional_headers(record: UrlRecord | None) -> dict[str, str] | None:
    """If-None-Match / If-Modified-Since for a page whose 2xx original is archived."""
    if record is None or record.original is None or record.status is None or not 200 <= record.status < 300:
        return None
    headers = {}
    if record.etag:
        headers["If-None-Match"] = record.etag
    if record.last_modified:
        headers["If-Modified-Since"] = record.last_modified
    return headers or None


def store_mode(record: UrlRecord | None, result: FetchResult, digest: str | None, dedup: bool) -> StoreMode:
    """How to archive ``result`` of a URL whose record is ``record`` (module docstring)."""
    if record is None or record.original is None or result.status is None or result.error is not None:
        return "fetch"
    if result.status == 304:
        return "server-not-modified"
    if dedup and not result.truncated and result.status == record.status and digest == record.original.payload_digest:
        return "identical-payload-digest"
    return "fetch"


@dataclass(frozen=True, slots=True)
class Visit:
    """A final fetch as the record needs it."""

    result: FetchResult
    mode: StoreMode
    digest: str | None
    ref: ArchiveRef | None
    simhash: int | None = None
    near_dup_of: str | None = None
    links_digest: str | None = None


def after_fetch(
    previous: UrlRecord | None, fresh: UrlRecord, visit: Visit, *, cycle: int, dead_after: int, history_max: int
) -> UrlRecord:
    """The record after ``visit``; ``fresh`` is the record of a URL seen for the first time."""
    result = visit.result
    record = previous or fresh
    record = replace(record, pending_cycle=None)
    if result.status is None:
        return _count_failure(record, result.error, cycle, dead_after)
    now = result.started_at
    changed = _changed(previous, visit)
    record = _with_observation(record, now, changed, history_max)
    record = replace(
        record,
        etag=result.header("ETag") or (record.etag if visit.mode == "server-not-modified" else None),
        last_modified=result.header("Last-Modified") or (record.last_modified if visit.mode == "server-not-modified" else None),
    )
    if previous is None and 200 <= result.status < 300:
        record = replace(record, first_age_s=content_age_s(result.header("Last-Modified"), now))
    if visit.mode == "fetch":
        record = replace(
            record, status=result.status, digest=visit.digest, original=visit.ref,
            simhash=visit.simhash, near_dup_of=visit.near_dup_of,
            links_digest=visit.links_digest or record.links_digest,
            last_change_s=now if changed is not False else record.last_change_s,
        )
    if result.status in GONE_STATUSES:
        return _count_failure(record, str(result.status), cycle, dead_after)
    return replace(record, failures=0)


def after_unfetched(record: UrlRecord, error: str, *, cycle: int, dead_after: int) -> UrlRecord:
    """The record after a queued revisit that made no request (dead host, robots, ...)."""
    return _count_failure(replace(record, pending_cycle=None), error, cycle, dead_after)


def content_age_s(last_modified: str | None, now: float) -> float | None:
    """Seconds since ``last_modified`` (an HTTP date) at ``now``; None if absent, garbage or in the future."""
    if not last_modified:
        return None
    try:
        modified = parsedate_to_datetime(last_modified).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return now - modified if modified <= now else None


def _changed(previous: UrlRecord | None, visit: Visit) -> bool | None:
    if previous is None or math.isnan(previous.last_fetch_s):
        return None
    if visit.mode != "fetch":
        return False
    return visit.result.status != previous.status or visit.digest != previous.digest


def _with_observation(record: UrlRecord, now: float, changed: bool | None, history_max: int) -> UrlRecord:
    first = record.first_fetch_s if not math.isnan(record.first_fetch_s) else now
    if changed is None:
        return replace(record, first_fetch_s=first, last_fetch_s=now, last_change_s=now, visits=record.visits + 1)
    history = (*record.history, (max(0.0, now - record.last_fetch_s), changed))[-history_max:]
    return replace(
        record, first_fetch_s=first, last_fetch_s=now, visits=record.visits + 1,
        changes=record.changes + changed, history=history, rate_per_s=estimate_rate(history),
    )


def _count_failure(record: UrlRecord, error: str | None, cycle: int, dead_after: int) -> UrlRecord:
    """A 404/410/DNS failure counts toward death; other errors leave the count alone."""
    if error is None or (error not in DEATH_ERRORS and not error.isdigit()):
        return record
    failures = record.failures + 1
    if failures >= dead_after and record.dead is None:
        return replace(record, failures=failures, dead=error, dead_cycle=cycle)
    return replace(record, failures=failures)
