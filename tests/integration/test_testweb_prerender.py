"""A prerendered synthetic web serves a crawl from its cache: no render during the crawl."""

from __future__ import annotations

import aiohttp

from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams
from webgather.testweb.server import TestWebServer


async def test_prerendered_pages_are_served_without_rendering() -> None:
    model = WebModel(WebParams.for_tests())
    async with TestWebServer(model) as server:
        count = server.prerender(max_pages=30)
        renders = server.renders
        assert count == 30 and renders >= 30
        urls = model.content_urls(server.port)[:30]
        connector = aiohttp.TCPConnector(resolver=_Loopback(model))
        async with aiohttp.ClientSession(connector=connector) as session:
            for url in urls:
                async with session.get(url) as response:
                    assert response.status in (200, 404, 410)  # some pages of the web have died
                    await response.read()
        assert server.renders == renders


class _Loopback(aiohttp.abc.AbstractResolver):
    def __init__(self, model: WebModel) -> None:
        self.model = model

    async def resolve(self, host: str, port: int = 0, family: int = 0) -> list[dict[str, object]]:
        return [{"hostname": host, "host": self.model.address(host), "port": port,
                 "family": 2, "proto": 0, "flags": 0}]

    async def close(self) -> None:
        return None
