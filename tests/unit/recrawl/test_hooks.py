"""RecrawlHooks on a real archive writer and state: revisit records, near-duplicates, dead pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from webgather.config import RecrawlConfig, StoreConfig
from webgather.frontier.model import CrawlItem
from webgather.recrawl.hooks import RecrawlHooks
from webgather.recrawl.state import UrlState
from webgather.store.crawllog import read_crawl_log
from webgather.store.writer import ArchiveWriter
from webgather.urls import fingerprint

from recrawl_records import T0, check_revisits_point_at_latest_originals, html, result, warc_records

PROFILE = "http://netpreserve.org/warc/1.1/revisit/"
_VOCAB = [f"word{i}" for i in range(300)]
TEXT = " ".join(_VOCAB[(i * 7919) % 300] for i in range(600))


@dataclass
class Rig:
    hooks: RecrawlHooks
    state: UrlState
    writer: ArchiveWriter
    out: Path

    async def visit(self, url: str, res: object, text: str = "") -> dict[str, object]:
        entry: dict[str, object] = {"url": url, "status": res.status}  # type: ignore[attr-defined]
        item = CrawlItem(url, fingerprint(url))
        await self.hooks.store(item, res, entry, None, text)  # type: ignore[arg-type]
        return entry


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    state = UrlState.open(tmp_path / "state" / "urls.sqlite")
    writer = ArchiveWriter.open(tmp_path, "n0", StoreConfig())
    yield Rig(RecrawlHooks(state, writer, RecrawlConfig(), cycle=1), state, writer, tmp_path)
    writer.close()
    state.close()


async def test_304_and_same_digest_become_revisits_of_the_right_original(rig: Rig) -> None:
    url = "http://a.test/p"
    fp = fingerprint(url)
    assert rig.hooks.request_headers(CrawlItem(url, fp)) is None
    await rig.visit(url, result(url, html("one"), ETag='"v1"', Last_Modified="Tue, 14 Nov 2023 22:13:20 GMT"))
    assert rig.hooks.request_headers(CrawlItem(url, fp)) == {
        "If-None-Match": '"v1"', "If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT"}
    e304 = await rig.visit(url, result(url, b"", 304, T0 + 60, ETag='"v1"'))
    same = await rig.visit(url, result(url, html("one"), 200, T0 + 120, ETag='"v1"'))
    await rig.visit(url, result(url, html("two"), 200, T0 + 180, ETag='"v2"'))
    again = await rig.visit(url, result(url, html("two"), 200, T0 + 240, ETag='"v2"'))
    await rig.writer.drain()
    assert (e304["revisit"], same["revisit"], again["revisit"]) == (
        "server-not-modified", "identical-payload-digest", "identical-payload-digest")
    records = warc_records(rig.out)
    assert [r["type"] for r in records] == ["response", "revisit", "revisit", "response", "revisit"]
    assert [r["profile"] for r in records if r["type"] == "revisit"] == [
        PROFILE + "server-not-modified", PROFILE + "identical-payload-digest", PROFILE + "identical-payload-digest"]
    assert records[1]["status"] == "304"
    assert check_revisits_point_at_latest_originals(records) == 3
    assert records[4]["refers_to"] == records[3]["id"]
    record = rig.state.get(fp)
    assert record is not None
    assert (record.visits, record.changes, record.etag) == (5, 1, '"v2"')
    assert record.history == ((60.0, False), (60.0, False), (60.0, True), (60.0, False))
    assert record.rate_per_s > 0
    counts = rig.state.cycle_counts(1)
    assert counts["not_modified"] == 1 and counts["same_digest"] == 2 and counts["changed"] == 1
    log = list(read_crawl_log(rig.out / "crawl.log.jsonl"))
    assert [e.get("revisit") for e in log] == [None, "server-not-modified", "identical-payload-digest", None,
                                               "identical-payload-digest"]


async def test_dedup_off_stores_full_copies(rig: Rig) -> None:
    rig.hooks.config = RecrawlConfig(dedup=False, conditional_get=False)
    url = "http://a.test/q"
    await rig.visit(url, result(url, html("one")))
    assert rig.hooks.request_headers(CrawlItem(url, fingerprint(url))) is None
    await rig.visit(url, result(url, html("one"), t=T0 + 60))
    await rig.writer.drain()
    assert [r["type"] for r in warc_records(rig.out)] == ["response", "response"]


async def test_near_duplicates_are_recorded(rig: Rig) -> None:
    a, b, c = "http://a.test/a", "http://b.test/b", "http://c.test/c"
    await rig.visit(a, result(a, html(TEXT)), TEXT)
    entry = await rig.visit(b, result(b, html(TEXT + " today")), TEXT + " today")
    other = "completely different words about gardening soil tomatoes sunlight water compost seasons"
    entry_c = await rig.visit(c, result(c, html(other)), other)
    assert entry["near_dup_of"] == a
    assert "near_dup_of" not in entry_c
    rec_b = rig.state.get(fingerprint(b))
    assert rec_b is not None and rec_b.near_dup_of == a
    assert rig.state.totals()["near_duplicates"] == 1
    # a page is not a near-duplicate of its own earlier copy
    entry_a = await rig.visit(a, result(a, html(TEXT + " edited"), t=T0 + 60), TEXT + " edited")
    assert entry_a.get("near_dup_of") == b


async def test_pages_gone_twice_are_dead(rig: Rig) -> None:
    url, host_gone = "http://a.test/dies", "http://gone.test/x"
    await rig.visit(url, result(url, html("alive")))
    await rig.visit(url, result(url, b"gone", 410, T0 + 60))
    assert rig.state.get(fingerprint(url)).dead is None  # type: ignore[union-attr]
    await rig.visit(url, result(url, b"gone", 410, T0 + 120))
    record = rig.state.get(fingerprint(url))
    assert record is not None and (record.dead, record.dead_cycle) == ("410", 1)
    await rig.visit(host_gone, result(host_gone, html("alive")))
    item = CrawlItem(host_gone, fingerprint(host_gone))
    rig.hooks.unfetched(item, "robots")
    rig.hooks.unfetched(item, "dns")
    assert rig.state.get(item.fp).dead is None  # type: ignore[union-attr]
    rig.hooks.unfetched(item, "dns")
    assert rig.state.get(item.fp).dead == "dns"  # type: ignore[union-attr]
    assert sorted(rig.state.dead_urls(1)) == [(url, "410"), (host_gone, "dns")]
    assert rig.state.plan_arrays().fp.size == 0
    assert rig.state.cycle_counts(1)["died"] == 2


async def test_robots_answers_are_reused_within_the_ttl(tmp_path: Path) -> None:
    from webgather.recrawl.hooks import RobotsReuse

    now = {"t": T0}
    state = UrlState.open(tmp_path / "urls.sqlite")
    writer = ArchiveWriter.open(tmp_path, "n0", StoreConfig())
    try:
        reuse = RobotsReuse(ttl_s=3600.0, user_agent="webgather-test", max_bytes=10_000, wall=lambda: now["t"])
        hooks = RecrawlHooks(state, writer, RecrawlConfig(), 1, reuse)
        assert hooks.cached_robots("a.test") is None
        body = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n"
        hooks.robots_fetched("a.test", result("http://a.test/robots.txt", body))
        hooks.robots_fetched("b.test", result("http://b.test/robots.txt", b"", 404))
        hooks.robots_fetched("c.test", result("http://c.test/robots.txt", b"", 301))
        now["t"] = T0 + 3599
        rules = hooks.cached_robots("a.test")
        assert rules is not None and not rules.allowed("http://a.test/private/x") and rules.allowed("http://a.test/")
        assert rules.crawl_delay_s == 2.0
        assert hooks.cached_robots("b.test") is not None and hooks.cached_robots("c.test") is not None
        now["t"] = T0 + 3600
        assert hooks.cached_robots("a.test") is None
        assert RecrawlHooks(state, writer, RecrawlConfig(), 1).cached_robots("a.test") is None  # no reuse asked
    finally:
        writer.close()
        state.close()
