"""Re-crawl cycles against the synthetic web, with its clock jumping hours between cycles."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from webgather.runtime.launch.crawl import run_continuous, run_cycle
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.closure import crawl_outcomes
from webgather.testweb.server import TestWebServer

from node_crawl_helpers import fetched_urls, final_entries, verify_warcs
from recrawl_web import HOUR, T0, JumpClock, changing_web, recrawl_config

sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "recrawl"))
from recrawl_records import check_revisits_point_at_latest_originals, warc_records  # noqa: E402


def _is_dead(server: TestWebServer, url: str, t: float) -> bool:
    answer = server.model.page(url, t, body=False)
    return answer.fault == "dead"


async def test_cycles_revisit_with_304_and_same_digest_and_drop_dead_pages(tmp_path: Path) -> None:
    model = changing_web()
    clock = JumpClock(T0 + 60)
    async with TestWebServer(model, clock=clock) as server:
        config = recrawl_config(server, tmp_path)
        seeds = [server.home_url(0)]
        first = await run_cycle(config, seeds, clock=clock)
        expected = crawl_outcomes(model, seeds, config, now_s=clock.wall())
        assert set(fetched_urls(final_entries(tmp_path / "out"))) == set(expected.fetched)
        n = len(expected.fetched)
        assert first["recrawl"]["counts"]["new_pages"] == n
        summaries: list[dict[str, Any]] = []
        starts: list[float] = []
        for k in range(5):
            clock.advance(HOUR)
            cfg = config if k != 1 else dataclasses.replace(
                config, recrawl=dataclasses.replace(config.recrawl, conditional_get=False))
            starts.append(clock.wall())
            summaries.append(await run_cycle(cfg, clock=clock))
    counts = [s["recrawl"]["counts"] for s in summaries]
    assert all(s["recrawl"]["cycle_done"] for s in summaries)
    assert counts[0]["not_modified"] > 0 and counts[0].get("same_digest", 0) < counts[0]["not_modified"]
    assert counts[1].get("not_modified", 0) == 0 and counts[1]["same_digest"] > 0  # conditional GET off
    assert counts[0]["revisits"] == summaries[0]["recrawl"]["planned_revisits"] == n
    records = warc_records(tmp_path / "out")
    assert check_revisits_point_at_latest_originals(records) == sum(
        c.get("not_modified", 0) + c.get("same_digest", 0) for c in counts)
    assert verify_warcs(tmp_path / "out") > 0
    dead = {url for url, _ in summaries[-1]["recrawl"]["dead"]}
    assert dead, "the web should have dying pages"
    assert all(_is_dead(server, url, starts[-1]) for url in dead)
    assert {u for u in expected.fetched if _is_dead(server, u, starts[-2] - 60)} <= dead
    last_cycle_urls = {e["url"] for e in read_crawl_log(tmp_path / "out" / "crawl.log.jsonl")
                       if e.get("fetched_at", 0) >= starts[-1] and e.get("kind") == "page"}
    died_before_last = {url for url, _ in summaries[-2]["recrawl"]["dead"]}
    assert not died_before_last & last_cycle_urls, "a dead page was revisited"
    assert summaries[-1]["recrawl"]["totals"]["active"] == n - len(dead)


async def test_continuous_with_a_budget_and_the_optimal_policy(tmp_path: Path) -> None:
    model = changing_web(dying_share=0.0)
    clock = JumpClock(T0 + 60)
    budget = 12
    seen: list[dict[str, Any]] = []
    async with TestWebServer(model, clock=clock) as server:
        config = recrawl_config(server, tmp_path, budget_per_cycle=budget, policy="optimal", cycle_s=HOUR / 2)
        config = dataclasses.replace(config, recrawl=dataclasses.replace(config.recrawl, new_url_share=0.5))
        cycles = await run_continuous(config, [server.home_url(0)], clock=clock, max_cycles=8,
                                      sleep=clock.sleep, on_cycle=seen.append)
        expected = crawl_outcomes(model, [server.home_url(0)], config, now_s=clock.wall())
    assert cycles == 8
    fetches = [s["recrawl"]["counts"].get("fetches", 0) for s in seen]
    assert all(f <= budget for f in fetches) and fetches[0] == budget
    new_pages = sum(s["recrawl"]["counts"].get("new_pages", 0) for s in seen)
    revisits = sum(s["recrawl"]["counts"].get("revisits", 0) for s in seen)
    assert revisits > 0
    assert new_pages == len(expected.fetched), "never-seen URLs still get their share of the budget"
    assert seen[-1]["recrawl"]["totals"]["pending"] == 0 or not seen[-1]["finished"]
