"""One node against the synthetic web on loopback: exact coverage, outcomes and politeness."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from webgather.runtime.launch.crawl import run_crawl
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.graph import WebModel
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import crawl_config, fetched_urls, final_entries, write_resolve


@pytest.fixture(scope="module")
def model() -> WebModel:
    return WebModel(WebParams.for_tests())


async def test_fetched_set_equals_closure_and_outcomes_match(model: WebModel, tmp_path: Path) -> None:
    async with TestWebServer(model) as server:
        config = crawl_config(crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path))
        seeds = [server.home_url(0)]
        summary = await run_crawl(config, seeds)
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
    entries = final_entries(tmp_path / "out")
    fetched = fetched_urls(entries)
    assert summary["finished"] is True
    assert set(fetched) == set(expected.fetched)
    assert max(fetched.values()) == 1, "a URL was fetched twice"
    by_url = {e["url"]: e for e in entries}
    wrong = {
        url: ((e.status, e.error), (by_url[url]["status"], by_url[url]["error"]))
        for url, e in expected.outcomes.items()
        if url in by_url and (e.status, e.error) != (by_url[url]["status"], by_url[url]["error"])
    }
    assert wrong == {}
    kinds = {e.fault for e in expected.outcomes.values() if e.fault}
    assert len(kinds) >= 15, f"the test web should exercise every fault kind, saw {sorted(kinds)}"


async def test_politeness_holds_in_the_servers_records(model: WebModel, tmp_path: Path) -> None:
    min_delay_s, per_ip = 0.05, 2
    async with TestWebServer(model) as server:
        config = crawl_config(
            crawl_config_for(model.params), tmp_path / "out", write_resolve(server, tmp_path),
            min_delay_s=min_delay_s, per_ip_connections=per_ip,
        )
        seeds = [server.home_url(0)]
        await run_crawl(config, seeds)
        expected = crawl_outcomes(model, seeds, config, now_s=server.clock.wall())
        records = list(server.records)
    by_host: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for r in records:
        by_host[r.host].append((r.start_s, r.end_s, r.path))
    delays = {host: r.crawl_delay_s or 0.0 for host, r in expected.robots.items()}
    for host, spans in by_host.items():
        spans.sort()
        wanted = max(min_delay_s, min(delays.get(host, 0.0), config.politeness.max_crawl_delay_s))
        for (s0, e0, p0), (s1, _e1, p1) in zip(spans, spans[1:]):
            assert s1 >= e0, f"{host}: two requests at once ({p0}, {p1})"
            assert s1 - e0 >= wanted - 0.005, f"{host}: {p1} came {s1 - e0:.3f}s after {p0} (< {wanted}s)"
    _assert_per_ip_cap(records, per_ip)
    blocked = {u for u, e in expected.outcomes.items() if e.error == "robots"}
    requested = {f"http://{r.host}{r.path}" for r in records}
    assert blocked, "the test web should have robots-disallowed URLs"
    assert not blocked & requested


def _assert_per_ip_cap(records: list, cap: int) -> None:
    events: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for r in records:
        events[r.local].append((r.start_s, 1))
        events[r.local].append((r.end_s, -1))
    for local, evs in events.items():
        active = peak = 0
        for _t, step in sorted(evs, key=lambda e: (e[0], e[1])):
            active += step
            peak = max(peak, active)
        assert peak <= cap, f"{local}: {peak} requests at once (cap {cap})"
