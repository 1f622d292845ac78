"""Items to Parquet, to an object and from worker processes (``webgather.Crawl(items=, workers=)``)
against the synthetic web: the items are exactly one per parsed HTML page, as the hook yielded them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import webgather
from webgather.config import CrawlConfig
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

import items_hook_module
from node_crawl_helpers import crawl_config, fetched_urls, final_entries, write_resolve

pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the test extra) is not installed")
HTML = ("text/html", "application/xhtml+xml")


def _config(model: WebModel, server: TestWebServer, tmp_path: Path) -> CrawlConfig:
    return crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path))


def _parsed_pages(out: Path) -> set[str]:
    return {e["url"] for e in final_entries(out) if e["kind"] == "page" and e["error"] is None
            and 200 <= (e["status"] or 0) < 300 and e.get("content_type") in HTML}


class Recorder:
    """An on_page that remembers what it yielded."""

    def __init__(self) -> None:
        self.yielded: list[dict[str, Any]] = []

    def __call__(self, page: webgather.Page) -> list[dict[str, Any]]:
        item = {"title": page.title, "links": len(page.links), "first": page.links[0].url if page.links else None}
        self.yielded.append({"page_url": page.url, **item})
        return [item]


async def test_parquet_items_are_what_the_hook_yielded(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests(n_hosts=3))
    hook = Recorder()
    async with TestWebServer(model) as server:
        summary = await webgather.Crawl(server.home_url(0), config=_config(model, server, tmp_path), on_page=hook,
                                        items=tmp_path / "items.parquet").run_async()
    assert summary.finished and summary.items == len(hook.yielded) > 5
    assert summary.items_file == tmp_path / "items.parquet" and not (tmp_path / "out" / "items.jsonl").exists()
    rows = pq.read_table(summary.items_file).to_pylist()
    assert sorted(rows, key=lambda r: r["page_url"]) == sorted(({**i, "_extra": None} for i in hook.yielded),
                                                                key=lambda r: r["page_url"])
    assert {r["page_url"] for r in rows} == _parsed_pages(tmp_path / "out")


async def test_an_item_sink_object_gets_every_item_and_is_closed(tmp_path: Path) -> None:
    class Collect:
        def __init__(self) -> None:
            self.items: list[dict[str, Any]] = []
            self.closed = 0

        def write(self, item: dict[str, Any]) -> None:
            self.items.append(item)

        def close(self) -> None:
            self.closed += 1

    model = WebModel(WebParams.for_tests(n_hosts=3))
    hook, sink = Recorder(), Collect()
    async with TestWebServer(model) as server:
        summary = await webgather.Crawl(server.home_url(0), config=_config(model, server, tmp_path), on_page=hook,
                                        items=sink).run_async()
    assert summary.finished and sink.closed == 1 and sink.items == hook.yielded and len(sink.items) > 5
    assert not (tmp_path / "out" / "items.jsonl").exists()


@pytest.mark.slow
async def test_workers_with_a_hooks_module_give_the_closure_and_every_page_s_items(tmp_path: Path) -> None:
    model = WebModel(WebParams.for_tests(n_hosts=6))
    async with TestWebServer(model) as server:
        config = _config(model, server, tmp_path)
        seeds = [server.home_url(0)]
        crawl = webgather.Crawl(seeds, config=config, on_page=items_hook_module.on_page, workers=2,
                                items="items.parquet")
        assert crawl.config.hooks.module == "items_hook_module" and crawl.hooks is None
        summary = await crawl.run_async()
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
    out = tmp_path / "out"
    assert summary.finished and summary.raw["workers"] == 2
    assert set(fetched_urls(final_entries(out))) == set(expected.fetched), "the closure, as one node crawls it"
    files = summary.items_files
    assert files == {f"w{k}": out / "nodes" / f"w{k}" / f"items-w{k}.parquet" for k in range(2)}
    rows = [r for path in files.values() if path.exists() for r in pq.read_table(path).to_pylist()]
    urls = [r["page_url"] for r in rows]
    assert len(urls) == len(set(urls)) == summary.items, "each page's item once, counted in the summary"
    assert set(urls) == _parsed_pages(out)
    assert all(set(r) == {"page_url", "title", "links", "depth", "_extra"} and r["_extra"] is None for r in rows)


async def test_this_process_as_a_node_of_a_redis_crawl(tmp_path: Path) -> None:
    from webgather.cluster.embedded import EmbeddedRedis
    from webgather.commands.node import default_node_id

    model = WebModel(WebParams.for_tests(n_hosts=3))
    async with TestWebServer(model) as server:
        config = _config(model, server, tmp_path)
        seeds = [server.home_url(0)]
        with EmbeddedRedis(tmp_path / "redis") as redis:
            summary = await webgather.Crawl(seeds, config=config, hooks="items_hook_module", items="items.parquet",
                                            redis=redis.url, crawl_id="api").run_async()
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
    node = default_node_id()
    out = tmp_path / "out"
    assert summary.raw["node"] == node and summary.raw["end"] == "done"
    assert set(fetched_urls(final_entries(out))) == set(expected.fetched)
    assert summary.items_file == out / "nodes" / node / f"items-{node}.parquet"
    urls = [r["page_url"] for r in pq.read_table(summary.items_file).to_pylist()]
    assert len(urls) == len(set(urls)) == summary.items and set(urls) == _parsed_pages(out)


async def test_a_sink_that_fails_stops_the_crawl_loudly_and_the_resume_writes_the_rest(tmp_path: Path) -> None:
    import json

    from webgather.errors import WriteFailed

    class FailsThird:
        def __init__(self) -> None:
            self.items: list[dict[str, Any]] = []

        def write(self, item: dict[str, Any]) -> None:
            if len(self.items) == 2:
                raise OSError("the database went away")
            self.items.append(item)

        def close(self) -> None:
            pass

    model = WebModel(WebParams.for_tests(n_hosts=3))
    sink = FailsThird()
    async with TestWebServer(model) as server:
        config = _config(model, server, tmp_path)
        with pytest.raises(WriteFailed, match="item sink <FailsThird>.write raised OSError: the database went away"):
            await webgather.Crawl(server.home_url(0), config=config, on_page=Recorder(), items=sink).run_async()
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        assert summary["finished"] is False and "the database went away" in summary["write_failed"]
        resumed = await webgather.Crawl([], config=config, on_page=Recorder(), items=tmp_path / "rest.jsonl").run_async()
    assert resumed.finished
    rest = [json.loads(line)["page_url"] for line in (tmp_path / "rest.jsonl").read_text().splitlines()]
    got = [i["page_url"] for i in sink.items] + rest
    assert set(got) == _parsed_pages(tmp_path / "out"), "the page whose item failed is fetched again: none lost"


async def test_joining_a_redis_crawl_takes_its_hooks_and_this_node_s_items_path(tmp_path: Path) -> None:
    """``Crawl([], redis=, crawl_id=)`` joins as ``webgather node`` does; ``items`` is this node's, over the crawl's."""
    import dataclasses
    import json

    from webgather.cluster.embedded import EmbeddedRedis
    from webgather.cluster.redis import RedisBackend
    from webgather.commands.node import default_node_id
    from webgather.config import HooksConfig
    from webgather.runtime.launch.cluster import start_crawl

    model, node = WebModel(WebParams.for_tests(n_hosts=3)), default_node_id()
    async with TestWebServer(model) as server:
        config = _config(model, server, tmp_path)
        started = dataclasses.replace(config, hooks=HooksConfig(module="items_hook_module", items="crawl.parquet"))
        with EmbeddedRedis(tmp_path / "redis") as redis:
            backend = await RedisBackend.connect(redis.url, "joined", started.cluster.n_buckets)
            try:
                await start_crawl(backend, started, [server.home_url(0)], nodes=[node])
            finally:
                await backend.aclose()
            summary = await webgather.Crawl([], config=config, redis=redis.url, crawl_id="joined",
                                            items="mine.jsonl").run_async()
    out = tmp_path / "out"
    assert summary.raw["end"] == "done" and summary.items_file == out / "nodes" / node / f"mine-{node}.jsonl"
    items = [json.loads(line) for line in summary.items_file.read_text().splitlines()]
    assert {i["page_url"] for i in items} == _parsed_pages(out) and all("depth" in i for i in items)
    assert not (out / "nodes" / node / f"crawl-{node}.parquet").exists()
