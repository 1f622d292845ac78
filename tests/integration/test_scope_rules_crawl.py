"""A crawl of the synthetic web on loopback with [scope] rules fetches exactly the closure under the same rules."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from webgather.runtime.launch.crawl import run_crawl
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer
from webgather.urls import hostname

from node_crawl_helpers import crawl_config, fetched_urls, final_entries, write_resolve


async def test_exclude_include_surt_and_a_stripped_parameter_match_the_closure(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests())
    async with TestWebServer(model) as server:
        base = crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path))
        port = server.port
        rules = dataclasses.replace(
            base.scope,
            exclude=(r"/a/c/",),  # nested content pages i % 8 == 6
            # three hosts, in three spellings: Heritrix open host, Heritrix closed host with port, pywb's key
            include_surt=("http://(test,web,h0001,", f"http://(test,web,h0002,:{port})/",
                          f"test,web,h0003:{port})/"),
            strip_query_params=("PAGE",),  # /list?page=N&sort=new -> /list?sort=new, one URL per host
        )
        config = dataclasses.replace(base, scope=rules)
        seeds = [server.home_url(0)]
        summary = await run_crawl(config, seeds)
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
        unruled = crawl_outcomes(model, seeds, base, now_s=server.clock.wall())
    fetched = fetched_urls(final_entries(tmp_path / "out"))
    assert summary["finished"] is True
    assert set(fetched) == set(expected.fetched)
    assert max(fetched.values()) == 1, "a URL was fetched twice"
    assert {hostname(u) for u in fetched} == {"h0001.web.test", "h0002.web.test", "h0003.web.test"}
    assert not [u for u in fetched if "/a/c/" in u or "page=" in u]
    lists = [u for u in fetched if "/list?" in u]
    assert lists and all(u.endswith("/list?sort=new") for u in lists)
    # the rules did cut: without them the same crawl reaches more hosts, nested pages and list pages
    assert len({hostname(u) for u in unruled.fetched}) > 3
    assert [u for u in unruled.fetched if "/a/c/" in u] and [u for u in unruled.fetched if "page=" in u]
