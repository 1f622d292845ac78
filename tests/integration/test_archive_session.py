"""A site with a session cookie, a meta refresh and page requisites, crawled: the gated pages are archived
with 200, the Cookie header is in the WARC request records as sent, the refresh target is fetched, and every
requisite (a CDN's too, and those of the stylesheets) is archived and counted apart from the pages."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from webgather.runtime.launch.crawl import run_crawl

from webgather.store.crawllog import read_crawl_log

from archive_site import PAGES, REQUISITES, ArchiveSite
from node_crawl_helpers import final_entries


def final_entries_all(out: Path) -> list[dict[str, Any]]:
    """Final entries of every kind (pages, sitemaps and requisites)."""
    return [e for log in sorted(out.rglob("crawl.log.jsonl")) for e in read_crawl_log(log) if not e.get("retry")]


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


async def test_every_requisite_is_archived_even_on_another_host_and_counted_apart(tmp_path: Path) -> None:
    async with ArchiveSite() as site:
        summary = await run_crawl(site.config(tmp_path), [site.url("/")])
    entries = final_entries_all(tmp_path / "out")
    requisites = {e["url"]: (e["kind"], e["status"]) for e in entries if e["kind"].startswith("requisite")}
    assert set(requisites) == {site.url(path, host) for host, path in REQUISITES}
    assert all(status == 200 for _kind, status in requisites.values())
    assert requisites[site.url("/css/main.css")][0] == "requisite"
    assert requisites[site.url("/css/more.css")][0] == "requisite2"  # @import
    assert requisites[site.url("/img/p.png")][0] == "requisite3"  # in the imported stylesheet
    assert summary["pages"] == len(PAGES) and summary["requisites"] == len(REQUISITES)
    graph_sources = {e["url"] for e in entries if e.get("links")}
    assert graph_sources <= {site.url(p) for p in PAGES} | {site.url("/css/main.css"), site.url("/css/more.css")}
    responses = _request_cookies(tmp_path / "out")
    assert set(responses) >= {site.url(path, host) for host, path in REQUISITES}


async def test_no_requisites_fetches_pages_only_and_fewer_hops_stop_early(tmp_path: Path) -> None:
    async with ArchiveSite() as site:
        config = site.config(tmp_path / "off")
        off = await run_crawl(dataclasses.replace(config, scope=dataclasses.replace(config.scope, requisites=False)),
                              [site.url("/")])
        config = site.config(tmp_path / "two")
        await run_crawl(dataclasses.replace(config, scope=dataclasses.replace(config.scope, requisite_hops=2)),
                        [site.url("/")])
        seen = list(site.requests)
    assert off["requisites"] == 0 and off["pages"] == len(PAGES)
    assert not any(e["kind"].startswith("requisite") for e in final_entries_all(tmp_path / "off" / "out"))
    two = {e["url"] for e in final_entries_all(tmp_path / "two" / "out") if e["kind"].startswith("requisite")}
    assert site.url("/css/more.css") in two and site.url("/img/p.png") not in two
    assert ("cdn.test", "/lib.js", None) in seen


def test_the_crawl_report_shows_requisites_apart(capsys: Any) -> None:
    from webgather.commands.report import print_summary

    figures = {"pages": 5, "wall_s": 1.0, "pages_per_s": 5.0, "cpu_ms_per_page": 1.0, "peak_rss_mib": 50.0,
               "robots_fetches": 2, "retries": 0, "links_found": 9, "urls_new": 18, "finished": True}
    print_summary({**figures, "requisites": 13})
    assert "requisites 13 (not counted as pages)" in capsys.readouterr().out
    print_summary(figures)
    assert "requisites" not in capsys.readouterr().out


async def test_a_resumed_crawl_keeps_its_session(tmp_path: Path) -> None:
    async with ArchiveSite() as site:
        config = site.config(tmp_path)
        home_only = dataclasses.replace(config, scope=dataclasses.replace(config.scope, max_depth=0, requisites=False))
        await run_crawl(home_only, [site.url("/")])
        assert (tmp_path / "out" / "state" / "cookies.json").is_file()
        await run_crawl(home_only, [site.url("/gated/two.html")])  # a second run: the cookie came from the first
    status = {e["url"]: e["status"] for e in final_entries(tmp_path / "out") if e["kind"] == "page"}
    assert status == {site.url("/"): 200, site.url("/gated/two.html"): 200}
