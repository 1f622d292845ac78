"""Each node's own source address, and the synthetic web's per-(client address, host) latency.

The server (loopback only) records the peer address of every request; with the
latency model it delays each response by ``latency_s(peer, host)``.
"""

from __future__ import annotations

import pytest

from webgather.cli import main
from webgather.cluster.definition import CrawlDefinition
from webgather.config import CrawlConfig, FetchConfig, load
from webgather.errors import ConfigError
from webgather.fetch.http import HttpClient
from webgather.fetch.resolver import Resolver
from webgather.clock import SystemClock
from webgather.testweb import LatencyModel, TestWebServer, WebModel, WebParams
from webgather.testweb.latency import parse_latency_model


def _two_clients_in_different_cities(model: LatencyModel, host: str) -> tuple[str, str]:
    """Two 127.0.0.0/8 addresses whose latency to ``host`` differs by >= 20 ms."""
    candidates = [f"127.0.{9 + i // 200}.{1 + i % 200}" for i in range(400)]
    near = min(candidates, key=lambda a: model.latency_s(a, host))
    far = max(candidates, key=lambda a: model.latency_s(a, host))
    assert model.latency_s(far, host) - model.latency_s(near, host) >= 0.02
    return near, far


@pytest.mark.parametrize("client", ["native", "aiohttp"])
async def test_both_transports_bind_the_source_address_and_see_its_latency(client: str) -> None:
    web = WebModel(WebParams.for_tests(seed=5, n_hosts=3, mean_pages_per_host=4))
    latency = parse_latency_model("cities:4", seed=5)
    async with TestWebServer(web, latency=latency) as srv:
        url = srv.home_url(1)
        host = url.split("/")[2]
        resolver = Resolver(SystemClock(), static=dict(line.split() for line in srv.resolve_lines()))
        times: dict[str, float] = {}
        for address in _two_clients_in_different_cities(latency, host):
            config = FetchConfig(http_client=client, source_address=address)  # type: ignore[arg-type]
            async with HttpClient(config, resolver, SystemClock()) as http:
                result = await http.fetch(url)
            assert result.error is None and result.status == 200
            assert srv.records[-1].peer == address  # the server saw the node's own address
            times[address] = result.elapsed_s
        near, far = sorted(times, key=lambda a: latency.latency_s(a, host))
        expected_gap_s = latency.latency_s(far, host) - latency.latency_s(near, host)
        assert times[far] - times[near] >= 0.8 * expected_gap_s


async def test_an_unbindable_source_address_is_a_recorded_connect_failure() -> None:
    web = WebModel(WebParams.for_tests(seed=5, n_hosts=1, mean_pages_per_host=2))
    async with TestWebServer(web) as srv:
        resolver = Resolver(SystemClock(), static=dict(line.split() for line in srv.resolve_lines()))
        config = FetchConfig(source_address="::1", connect_timeout_s=2.0)  # IPv6 source, IPv4 server
        async with HttpClient(config, resolver, SystemClock()) as http:
            result = await http.fetch(srv.home_url(0))
    assert result.status is None and result.error == "connect"


def test_source_address_is_checked_and_stays_local_to_a_node() -> None:
    with pytest.raises(ConfigError, match="source_address"):
        load(None, {}, {"fetch.source_address": "node-a.example"})
    assert load(None, {}, {"fetch.source_address": "127.0.3.4"}).fetch.source_address == "127.0.3.4"
    config = CrawlConfig(fetch=FetchConfig(source_address="127.0.3.4"), seeds=("http://a.test/",))
    stored = CrawlDefinition.of(config, config.seeds, 0.0)
    assert "fetch.source_address" not in stored.config  # one node's address is not the crawl's
    assert stored.crawl_config().fetch.source_address is None
    assert stored.crawl_config(**{"fetch.source_address": "127.0.3.5"}).fetch.source_address == "127.0.3.5"


def test_latency_model_spec_and_cli_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_latency_model("cities:3", seed=2) == LatencyModel(seed=2, n_cities=3)
    assert parse_latency_model("cities:3:200", seed=2) == LatencyModel(seed=2, n_cities=3, per_unit_s=0.2)
    for bad in ("cities", "cities:0", "cities:x", "towns:4", "cities:65", "cities:4:", "cities:4:0", "cities:4:x"):
        with pytest.raises(ConfigError, match="cities:N"):
            parse_latency_model(bad, seed=0)
    assert main(["testweb", "serve", "--hosts", "1", "--latency-model", "bogus", "--out", "/nonexistent/x"]) == 2
    assert main(["crawl", "http://a.test/", "--workers", "2", "--source-address", "127.0.0.2"]) == 2
    assert "--source-address" in capsys.readouterr().err

