"""The re-crawl's seam in the node: conditional requests, revisit records, per-URL state.

:class:`~webgather.runtime.engine.node.CrawlNode` takes an optional ``hooks`` object
(:class:`FetchHooks`); without one it crawls exactly as before. With
:class:`RecrawlHooks`:

* ``request_headers(item)``: the URL's validators (If-None-Match,
  If-Modified-Since) when its 2xx original is archived (and
  ``recrawl.conditional_get``);
* ``store(...)`` replaces the node's archive write of a final fetch: a 304 or
  an unchanged payload becomes a revisit record referring to the original
  (:func:`~webgather.recrawl.observe.store_mode`); a new or changed 2xx page
  gets a SimHash, looked up among the node's stored pages for a
  near-duplicate (``near_dup_of`` in the crawl log and the state); its links
  go to the link log only when they differ from the last copy's; then the
  URL's record is saved (one SQLite transaction) before the node completes
  the fetch in the frontier;
* ``unfetched(item, error)``: a queued URL that got no request (dead host,
  robots) clears its pending mark; a DNS failure counts toward death;
* ``cached_robots(host)`` / ``robots_fetched(host, result)``: robots.txt
  answers are kept in the state and reused by later cycles for
  ``robots.ttl_s`` (RFC 9309: at most a day by default), so frequent cycles
  do not fetch every host's robots.txt each time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from webgather.config import RecrawlConfig
from webgather.fetch.model import FetchResult
from webgather.frontier.model import CrawlItem
from webgather.recrawl.observe import (
    UrlRecord,
    Visit,
    after_fetch,
    after_unfetched,
    conditional_headers,
    store_mode,
)
from webgather.recrawl.simhash import SimHashIndex, simhash
from webgather.recrawl.state import UrlState
from webgather.robots.parse import RobotsRules, rules_for_response
from webgather.store.records import sha1_digest
from webgather.store.warc import ArchiveRef
from webgather.store.writer import ArchiveWriter

__all__ = ["FetchHooks", "LinkArgs", "RecrawlHooks", "RobotsReuse"]

LinkArgs = tuple[str, int, int, list[tuple[str, int, int, str, bool]]]


class FetchHooks(Protocol):
    """What a node asks of a re-crawl (module docstring); all run on the event loop."""

    def request_headers(self, item: CrawlItem) -> dict[str, str] | None: ...

    async def store(
        self, item: CrawlItem, result: FetchResult, entry: dict[str, object], links: LinkArgs | None, text: str,
        rendered: bytes | None = None,
    ) -> None: ...

    def unfetched(self, item: CrawlItem, error: str) -> None: ...

    def cached_robots(self, host: str) -> RobotsRules | None: ...

    def robots_fetched(self, host: str, result: FetchResult) -> None: ...


@dataclass(frozen=True, slots=True)
class RobotsReuse:
    """How long and how robots.txt answers kept in the state are reused."""

    ttl_s: float
    user_agent: str
    max_bytes: int
    wall: Callable[[], float]


class RecrawlHooks:
    """:class:`FetchHooks` over a node's :class:`UrlState` and archive writer, for one cycle."""

    def __init__(self, state: UrlState, writer: ArchiveWriter, config: RecrawlConfig, cycle: int,
                 robots: RobotsReuse | None = None) -> None:
        self.robots = robots
        self.state = state
        self.writer = writer
        self.config = config
        self.cycle = cycle
        self.index = SimHashIndex(config.near_dup_max_bits)
        for fp, value in state.simhashes():
            self.index.add(fp, value)

    def request_headers(self, item: CrawlItem) -> dict[str, str] | None:
        if not self.config.conditional_get:
            return None
        return conditional_headers(self.state.get(item.fp))

    async def store(
        self, item: CrawlItem, result: FetchResult, entry: dict[str, object], links: LinkArgs | None, text: str,
        rendered: bytes | None = None,
    ) -> None:
        """``rendered``: the page's DOM from the browser, archived beside a fetched (not a revisit) response."""
        previous = self.state.get(item.fp)
        digest = sha1_digest(result.raw_body) if result.status is not None else None
        mode = store_mode(previous, result, digest, self.config.dedup)
        if mode != "fetch" and previous is not None and previous.original is not None:
            entry["revisit"] = mode
            ref: ArchiveRef | None = await self.writer.write_revisit(result, previous.original, mode, entry)
            visit = Visit(result, mode, digest, ref)
        else:
            visit = self._fetch_visit(item, result, digest, links, text, previous)
            if visit.near_dup_of is not None:
                entry["near_dup_of"] = visit.near_dup_of
            ref = await self.writer.write(result, entry, _changed_links(links, visit, previous), rendered=rendered)
            visit = Visit(result, mode, digest, ref, visit.simhash, visit.near_dup_of, visit.links_digest)
        self._save(previous, item, visit)

    def unfetched(self, item: CrawlItem, error: str) -> None:
        record = self.state.get(item.fp)
        if record is None:
            return
        after = after_unfetched(record, error, cycle=self.cycle, dead_after=self.config.dead_after_failures)
        self.state.put(after, self.cycle, {"unfetched": 1, "died": int(after.dead is not None and record.dead is None)})

    def cached_robots(self, host: str) -> RobotsRules | None:
        known = self.state.robots_get(host) if self.robots is not None else None
        if self.robots is None or known is None or self.robots.wall() - known[2] >= self.robots.ttl_s:
            return None
        return rules_for_response(known[0], known[1], self.robots.user_agent, self.robots.max_bytes)

    def robots_fetched(self, host: str, result: FetchResult) -> None:
        """Keep the final answer of a robots.txt fetch that gave rules (2xx, 4xx, redirect trouble)."""
        if self.robots is None or result.status is None:
            return
        status, body = (result.status, result.body) if not 300 <= result.status < 400 else (404, b"")
        self.state.robots_put(host, status, body, result.started_at)

    def _fetch_visit(
        self, item: CrawlItem, result: FetchResult, digest: str | None, links: LinkArgs | None, text: str,
        previous: UrlRecord | None,
    ) -> Visit:
        value = simhash(text) if text else None
        near: str | None = None
        if value is not None:
            found = self.index.nearest(value, exclude=item.fp)
            if found is not None:
                near = self.state.url_of(found[0])
        links_digest = _links_digest(links[3]) if links is not None else None
        return Visit(result, "fetch", digest, None, value, near, links_digest)

    def _save(self, previous: UrlRecord | None, item: CrawlItem, visit: Visit) -> None:
        fresh = UrlRecord(item.fp, item.url, item.kind, item.depth)
        record = after_fetch(previous, fresh, visit, cycle=self.cycle,
                             dead_after=self.config.dead_after_failures, history_max=self.config.history_max)
        if visit.mode == "fetch" and visit.result.status is not None:
            if record.simhash is not None and record.dead is None:
                self.index.add(item.fp, record.simhash)
            else:
                self.index.remove(item.fp)
        self.state.put(record, self.cycle, _counts(previous, record, visit))


def _links_digest(records: Sequence[tuple[str, int, int, str, bool]]) -> str:
    return hashlib.sha1("\n".join(r[0] for r in records).encode("utf-8", "surrogatepass")).hexdigest()


def _changed_links(
    links: LinkArgs | None, visit: Visit, previous: UrlRecord | None
) -> list[tuple[str, int, int, str, bool]] | None:
    """The page's link records for the link log, unless the last copy had the same links."""
    if links is None or (previous is not None and previous.links_digest == visit.links_digest):
        return None
    return links[3]


def _counts(previous: UrlRecord | None, record: UrlRecord, visit: Visit) -> dict[str, int]:
    status = visit.result.status
    new = previous is None or previous.visits == 0
    observed = status is not None and not new
    return {
        "fetches": 1,
        "new_pages": int(new and status is not None),
        "revisits": int(not new),
        "not_modified": int(visit.mode == "server-not-modified"),
        "same_digest": int(visit.mode == "identical-payload-digest"),
        "changed": int(observed and record.changes > (previous.changes if previous else 0)),
        "no_response": int(status is None),
        "died": int(record.dead is not None and (previous is None or previous.dead is None)),
        "near_duplicates": int(visit.near_dup_of is not None),
        "bytes_archived": len(visit.result.raw_body) if visit.mode == "fetch" else 0,
    }
