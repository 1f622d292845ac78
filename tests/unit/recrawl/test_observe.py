"""observe: how a visit is archived and what it does to a URL's record (pure)."""

from __future__ import annotations

import math
from dataclasses import replace

from webgather.recrawl.observe import UrlRecord, Visit, after_fetch, after_unfetched, conditional_headers, store_mode
from webgather.store.warc import ArchiveRef

from recrawl_records import T0, result

URL = "http://a.test/p"
REF = ArchiveRef("f.warc.gz", 0, 100, "<urn:uuid:1>", "sha1:AAAA", "2023-11-14T22:13:20Z", URL)


def _record(**changes: object) -> UrlRecord:
    base = UrlRecord(1, URL, status=200, digest="sha1:AAAA", original=REF, etag='"e"',
                     first_fetch_s=T0, last_fetch_s=T0, last_change_s=T0, visits=1)
    return replace(base, **changes)  # type: ignore[arg-type]


def _after(prev: UrlRecord | None, visit: Visit) -> UrlRecord:
    return after_fetch(prev, UrlRecord(1, URL), visit, cycle=3, dead_after=2, history_max=3)


def test_store_mode() -> None:
    rec = _record()
    assert store_mode(None, result(URL, b"x"), "sha1:X", True) == "fetch"
    assert store_mode(rec, result(URL, b"", 304), None, True) == "server-not-modified"
    assert store_mode(rec, result(URL, b"x"), "sha1:AAAA", True) == "identical-payload-digest"
    assert store_mode(rec, result(URL, b"x"), "sha1:AAAA", False) == "fetch"
    assert store_mode(rec, result(URL, b"x", 404), "sha1:AAAA", True) == "fetch"
    assert store_mode(replace(rec, original=None), result(URL, b"", 304), None, True) == "fetch"
    assert store_mode(rec, replace(result(URL, b"x"), truncated=True), "sha1:AAAA", True) == "fetch"


def test_conditional_headers_need_an_archived_2xx_original() -> None:
    assert conditional_headers(None) is None
    assert conditional_headers(_record(etag=None)) is None
    assert conditional_headers(_record()) == {"If-None-Match": '"e"'}
    assert conditional_headers(_record(status=404)) is None
    assert conditional_headers(_record(original=None)) is None


def test_first_visit_observes_no_interval() -> None:
    rec = _after(None, Visit(result(URL, b"x", ETag='"a"'), "fetch", "sha1:X", REF))
    assert (rec.visits, rec.history, rec.etag, rec.first_fetch_s, rec.last_change_s) == (1, (), '"a"', T0, T0)


def test_history_is_capped_and_feeds_the_estimate() -> None:
    rec = _record()
    for k in range(1, 6):
        changed = k % 2 == 0
        digest = f"sha1:{k}" if changed else rec.digest
        mode = "fetch" if changed else "identical-payload-digest"
        rec = _after(rec, Visit(result(URL, b"x", t=T0 + 100 * k), mode, digest, REF))  # type: ignore[arg-type]
    assert rec.history == ((100.0, False), (100.0, True), (100.0, False))
    assert (rec.visits, rec.changes) == (6, 2)
    assert rec.rate_per_s > 0 and rec.last_change_s == T0 + 400


def test_304_keeps_the_original_and_the_validators() -> None:
    rec = _after(_record(), Visit(result(URL, b"", 304, T0 + 10), "server-not-modified", None, None))
    assert (rec.status, rec.original, rec.etag, rec.digest) == (200, REF, '"e"', "sha1:AAAA")
    assert rec.history == ((10.0, False),)


def test_no_response_teaches_nothing_and_dns_counts_toward_death() -> None:
    timeout = replace(result(URL, b"", t=T0 + 10), status=None, error="timeout")
    rec = _after(_record(pending_cycle=3), Visit(timeout, "fetch", None, None))
    assert (rec.visits, rec.history, rec.pending_cycle, rec.failures) == (1, (), None, 0)
    dns = replace(timeout, error="dns")
    rec = _after(rec, Visit(dns, "fetch", None, None))
    assert (rec.failures, rec.dead) == (1, None)
    rec = after_unfetched(rec, "dns", cycle=4, dead_after=2)
    assert (rec.failures, rec.dead, rec.dead_cycle) == (2, "dns", 4)
    assert after_unfetched(_record(), "robots", cycle=4, dead_after=1).dead is None


def test_gone_twice_is_dead_and_a_recovery_resets_the_count() -> None:
    rec = _after(_record(), Visit(result(URL, b"gone", 404, T0 + 10), "fetch", "sha1:G", REF))
    assert (rec.failures, rec.dead, rec.status, rec.changes) == (1, None, 404, 1)
    back = _after(rec, Visit(result(URL, b"x", 200, T0 + 20), "fetch", "sha1:B", REF))
    assert back.failures == 0
    dead = _after(rec, Visit(result(URL, b"gone", 404, T0 + 20), "identical-payload-digest", "sha1:G", REF))
    assert (dead.dead, dead.dead_cycle) == ("404", 3)
    assert not math.isnan(dead.last_fetch_s)


def test_content_age_and_the_first_visit_prior() -> None:
    from webgather.recrawl.observe import content_age_s

    assert content_age_s("Tue, 14 Nov 2023 22:13:20 GMT", T0 + 100) == 100.0
    assert content_age_s("Tue, 14 Nov 2023 22:13:20 GMT", T0 - 1) is None  # in the future
    assert content_age_s("yesterday", T0) is None
    assert content_age_s(None, T0) is None
    first = _after(None, Visit(result(URL, b"x", t=T0 + 60, Last_Modified="Tue, 14 Nov 2023 22:13:20 GMT"),
                               "fetch", "sha1:X", REF))
    assert first.first_age_s == 60.0
    later = _after(first, Visit(result(URL, b"y", t=T0 + 120, Last_Modified="Tue, 14 Nov 2023 22:14:00 GMT"),
                                "fetch", "sha1:Y", REF))
    assert later.first_age_s == 60.0
