"""A site with a session cookie and a meta refresh, crawled: the gated pages are archived with 200,
the Cookie header is in the WARC request records as sent, and the refresh target is fetched."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from webgather.runtime.crawl import run_crawl

from archive_site import ArchiveSite
from node_crawl_helpers import final_entries


def _request_cookies(out: Path) -> dict[str, str | None]:
    sent: dict[str, str | None] = {}
    for path in sorted(out.rglob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "request":
                    sent[record.rec_headers.get_header("WARC-Target-URI")] = record.http_headers.get_header("Cookie")
    return sent


async def test_the_session_holds_and_the_refresh_is_followed(tmp_path: Path) -> None:
    async with ArchiveSite() as site:
        config = site.config(tmp_path)
        summary = await run_crawl(config, [site.url("/")])
        seen = list(site.requests)
    assert summary["finished"] is True
    status = {e["url"]: e["status"] for e in final_entries(tmp_path / "out") if e["kind"] == "page"}
    assert status == {site.url(p): 200 for p in ("/", "/gated/one.html", "/gated/two.html", "/old.html", "/new.html")}
    sent = _request_cookies(tmp_path / "out")
    assert sent[site.url("/")] is None
    assert sent[site.url("/gated/one.html")] == "session=s3ss10n"  # the public-suffix cookie was refused
    assert ("site.test", "/gated/two.html", "session=s3ss10n") in seen


async def test_cookies_off_sends_none_and_the_gate_answers_403(tmp_path: Path) -> None:
    async with ArchiveSite() as site:
        config = site.config(tmp_path, cookies=False)
        await run_crawl(config, [site.url("/")])
        seen = list(site.requests)
    assert all(cookie is None for _host, _path, cookie in seen)
    status = {e["url"]: e["status"] for e in final_entries(tmp_path / "out") if e["kind"] == "page"}
    assert status[site.url("/gated/one.html")] == 403
