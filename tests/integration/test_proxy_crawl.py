"""Crawls through an HTTP proxy started on loopback by the test (tests/integration/forward_proxy.py).

The synthetic web through the proxy fetches exactly its closure, politely per origin host, and the
WARC holds what went to the origins; NO_PROXY is honoured; wrong credentials and a dead proxy are
recorded failures, quickly. The proxy sits on 127.0.0.1, outside ``allow_addresses`` (which name
only the origins' addresses): the configured proxy needs no exemption, the origins still do.
"""

from __future__ import annotations

import dataclasses
import gzip
from collections import defaultdict
from pathlib import Path

import pytest

from webgather.config import CrawlConfig, FetchConfig, RobotsConfig
from webgather.runtime.launch.crawl import run_crawl
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from forward_proxy import ForwardProxy, closed_port
from node_crawl_helpers import crawl_config, fetched_urls, final_entries, verify_warcs, write_resolve

CREDENTIALS = ("crawler", "s3cret-proxy-pw")


@pytest.fixture(scope="module")
def model() -> WebModel:
    return WebModel(WebParams.for_tests())


def _through(config: CrawlConfig, server: TestWebServer, proxy_url: str, transport: str) -> CrawlConfig:
    addresses = tuple(sorted({line.split()[1] + "/32" for line in server.resolve_lines()}))
    fetch = dataclasses.replace(config.fetch, proxy=proxy_url, allow_addresses=addresses,
                                http_client=transport)  # type: ignore[arg-type]
    return dataclasses.replace(config, fetch=fetch)


def _resolve_map(server: TestWebServer) -> dict[str, str]:
    return dict(line.split() for line in server.resolve_lines())


@pytest.mark.parametrize("transport", ["native", "aiohttp"])
async def test_the_web_through_a_proxy_is_its_closure(transport: str, model: WebModel, tmp_path: Path) -> None:
    min_delay_s = 0.05
    out = tmp_path / "out"
    async with TestWebServer(model) as server, ForwardProxy(_resolve_map(server), CREDENTIALS) as proxy:
        base = crawl_config(crawl_config_for(model.params), out, write_resolve(server, tmp_path), min_delay_s=min_delay_s)
        config = _through(base, server, proxy.url(CREDENTIALS), transport)
        seeds = [server.home_url(0)]
        summary = await run_crawl(config, seeds)
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
        records = list(server.records)
    entries = final_entries(out)
    fetched = fetched_urls(entries)
    assert summary["finished"] is True
    assert set(fetched) == set(expected.fetched)
    assert max(fetched.values()) == 1, "a URL was fetched twice"
    by_url = {e["url"]: e for e in entries}
    wrong = {url: ((e.status, e.error), (by_url[url]["status"], by_url[url]["error"]))
             for url, e in expected.outcomes.items()
             if url in by_url and (e.status, e.error) != (by_url[url]["status"], by_url[url]["error"])}
    assert wrong == {}
    # every request went through the proxy, in absolute form, with the proxy's credentials
    assert proxy.requests and all(r.method == "GET" and r.target.startswith("http://") for r in proxy.requests)
    assert all(r.headers.get("proxy-authorization", "").startswith("Basic ") for r in proxy.requests)
    assert {f"http://{r.host}{r.path}" for r in records} <= {r.target for r in proxy.requests}
    _assert_polite_per_origin_host(records, min_delay_s, expected)
    _assert_the_warc_holds_the_origin_requests(out, set(_resolve_map(server).values()))


def _assert_polite_per_origin_host(records: list, min_delay_s: float, expected) -> None:  # type: ignore[no-untyped-def]
    """test_crawl_node's politeness check, per origin host (the proxy is one peer for them all).

    One exception: a request the origin reset without a byte, sent again at once on a new
    connection (RFC 9112 9.3.1: the native client does so once when a REUSED connection closes
    silently). The test proxy passes the origin's reset on as a plain close of a kept-alive
    connection, which is what that rule is for."""
    delays = {host: r.crawl_delay_s or 0.0 for host, r in expected.robots.items()}
    by_host: dict[str, list] = defaultdict(list)
    for r in records:
        by_host[r.host].append(r)
    for host, spans in by_host.items():
        spans.sort(key=lambda r: r.start_s)
        wanted = max(min_delay_s, min(delays.get(host, 0.0), 1.0))
        for r0, r1 in zip(spans, spans[1:]):
            assert r1.start_s >= r0.end_s, f"{host}: two requests at once ({r0.path}, {r1.path})"
            if r0.status is None and r0.bytes_sent == 0 and r1.path == r0.path and r1.conn_id != r0.conn_id:
                continue
            gap = r1.start_s - r0.end_s
            assert gap >= wanted - 0.005, f"{host}: {r1.path} came {gap:.3f}s after {r0.path} (< {wanted}s)"



def _assert_the_warc_holds_the_origin_requests(out: Path, origin_addresses: set[str]) -> None:
    from warcio.archiveiterator import ArchiveIterator

    assert verify_warcs(out) > 0
    raw = b"".join(gzip.decompress(p.read_bytes()) for p in sorted(out.rglob("*.warc.gz")))
    assert b"proxy-authorization" not in raw.lower() and CREDENTIALS[1].encode() not in raw
    requests = 0
    for path in sorted(out.rglob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type not in ("request", "response"):
                    continue
                uri = record.rec_headers.get_header("WARC-Target-URI")
                assert uri.startswith("http://") and "127.0.0.1" not in uri
                assert record.rec_headers.get_header("WARC-IP-Address") in origin_addresses
                if record.rec_type == "request":
                    requests += 1
                    line = record.http_headers.protocol + " " + record.http_headers.statusline
                    assert line.split()[1].startswith("/"), line  # origin form, as the origin got it
    assert requests > 0
