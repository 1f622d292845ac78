"""Frontier.requeue: revisits pass the seen-test and the host cap, durably."""

from __future__ import annotations

from pathlib import Path

from webgather.config import FrontierConfig, PolitenessConfig
from webgather.frontier.frontier import Frontier
from webgather.frontier.model import CrawlItem
from webgather.urls import fingerprint

POLITE = PolitenessConfig(min_delay_s=0.0)


def _item(url: str) -> CrawlItem:
    return CrawlItem(url, fingerprint(url))


def _drain(frontier: Frontier, now: float) -> list[str]:
    done: list[str] = []
    while True:
        item, _ = frontier.next_ready(now)
        if item is None:
            return done
        frontier.complete(item, now)
        done.append(item.url)


def test_requeue_bypasses_the_seen_test_and_the_cap(tmp_path: Path) -> None:
    frontier = Frontier.open(tmp_path / "state", FrontierConfig(), POLITE, max_pages_per_host=1)
    a, b = _item("http://a.test/1"), _item("http://a.test/2")
    assert frontier.add([a, b], 0.0) == [a]  # the cap takes one
    assert _drain(frontier, 1.0) == [a.url]
    assert frontier.add([a], 2.0) == []  # seen
    assert frontier.requeue([a, _item("http://b.test/x")], 2.0) != []
    frontier.close()
    again = Frontier.open(tmp_path / "state", FrontierConfig(), POLITE, max_pages_per_host=1)
    assert again.pending() == 2
    assert sorted(_drain(again, 3.0)) == ["http://a.test/1", "http://b.test/x"]
    again.close()
