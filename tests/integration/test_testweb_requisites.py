"""The synthetic web with page requisites (``WebParams.requisites``): a crawl fetches exactly its
closure's pages and its closure's requisites, counted apart; without the option nothing changes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, write_resolve

NOT_FETCHED = ("robots", "robots_unavailable", "off_scope")


async def test_a_crawl_fetches_the_closures_pages_and_requisites(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests(requisites=True))
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path))
        seeds = [server.home_url(0)]
        summary = await run_crawl(config, seeds)
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
    entries = [e for e in read_crawl_log(tmp_path / "out" / "crawl.log.jsonl")
               if not e.get("retry") and e.get("error") not in NOT_FETCHED and e["kind"] != "robots"]
    pages = {e["url"] for e in entries if not e["kind"].startswith("requisite")}
    requisites = {e["url"] for e in entries if e["kind"].startswith("requisite")}
    assert pages == set(expected.fetched)
    assert requisites == set(expected.requisites) and len(requisites) > 20
    assert any(u.endswith("/s/h.png") for u in requisites)  # page -> site.css -> more.css -> h.png: 3 hops
    assert summary["requisites"] == len(requisites)


def test_the_closure_without_requisites_is_unchanged_and_counts_none() -> None:
    plain = WebModel(WebParams.for_tests())
    rich = WebModel(WebParams.for_tests(requisites=True))
    config = crawl_config_for(plain.params)
    seeds = [f"http://{plain.hosts.names[0]}/"]
    before = crawl_outcomes(plain, seeds, config)
    with_requisites = crawl_outcomes(rich, seeds, config)
    assert before.requisites == frozenset()
    assert with_requisites.fetched == before.fetched and len(with_requisites.requisites) > 20
    off = dataclasses.replace(config, scope=dataclasses.replace(config.scope, requisites=False))
    assert crawl_outcomes(rich, seeds, off).requisites == frozenset()
    two = dataclasses.replace(config, scope=dataclasses.replace(config.scope, requisite_hops=2))
    assert not any(u.endswith("/s/h.png") for u in crawl_outcomes(rich, seeds, two).requisites)
    assert b"/s/site.css" in rich.page(seeds[0]).body and b"/s/" not in plain.page(seeds[0]).body
