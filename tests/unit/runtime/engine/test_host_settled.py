"""webgather.runtime.engine.host_settled: a bucket's robots rules and cookies out of one node and into another,
their TTL counted across the move."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from webgather.clock import FakeClock
from webgather.fetch.cookies import CrawlCookies
from webgather.frontier.bucket import BucketState, HostClock, HostSettled
from webgather.frontier.model import CrawlItem
from webgather.robots.compact import encode_rules
from webgather.robots.parse import RobotsRules
from webgather.runtime.engine.host_settled import export_settled, forget_settled, install_settled, with_settled
from webgather.runtime.engine.robots_store import RobotsStore
from webgather.urls import fingerprint

RULES = encode_rules(RobotsRules.from_text("User-agent: *\nDisallow: /private/\n", "webgather"))


def _node(tmp_path: Path, name: str, clock: FakeClock, cookies: bool = True) -> Any:
    """The parts host_settled reads: a clock, the robots store, the cookie jar."""
    return SimpleNamespace(clock=clock, robots_store=RobotsStore.open(tmp_path / name / "state"),
                           cookies=CrawlCookies() if cookies else None)


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[tuple[Any, Any, FakeClock]]:
    clock = FakeClock(1_800_000_000.0)
    old, new = _node(tmp_path, "old", clock), _node(tmp_path, "new", clock)
    yield old, new, clock
    old.robots_store.close()
    new.robots_store.close()


def _bucket(*hosts: str) -> BucketState:
    items = tuple(CrawlItem(f"http://{h}/q", fingerprint(f"http://{h}/q")) for h in hosts[1:])
    return BucketState(3, 16, items, hosts=(HostClock(hosts[0], 0.5),))


def test_fresh_rules_and_cookies_travel_and_nothing_else(nodes: tuple[Any, Any, FakeClock]) -> None:
    old, _new, clock = nodes
    wall = clock.wall()
    old.robots_store.put("a.test", wall + 100.0, RULES)
    old.robots_store.put("b.test:81", wall - 1.0, b"A")  # expired: not handed over
    old.cookies.store("http://c.test/", (("Set-Cookie", "sid=1; Path=/"),))
    assert export_settled(old, ["a.test", "b.test:81", "c.test", "d.test"], wall) == (
        HostSettled("a.test", RULES, 100.0),
        HostSettled("c.test", b"", 0.0, export_settled(old, ["c.test"], wall)[0].cookies))
    state = with_settled(old, _bucket("a.test", "c.test", "d.test"))
    assert [s.host for s in state.settled] == ["a.test", "c.test"] and state.settled_wall == wall


def test_the_new_owner_keeps_the_rules_until_the_old_owners_expiry(nodes: tuple[Any, Any, FakeClock]) -> None:
    old, new, clock = nodes
    old.robots_store.put("a.test", clock.wall() + 100.0, RULES)
    old.cookies.store("http://a.test/", (("Set-Cookie", "sid=1; Path=/"),))
    state = with_settled(old, _bucket("a.test"))
    forget_settled(old, ["a.test"])
    clock.advance(30.0)  # in transit, or a checkpoint restored 30 s after it was taken
    assert install_settled(new, state) == 1
    assert new.robots_store.get("a.test", clock.wall()) == (pytest.approx(clock.wall() + 70.0), RULES)
    assert new.robots_store.get("a.test", clock.wall() + 70.01) is None  # asked again after the TTL
    assert new.cookies.header("http://a.test/x") == "sid=1"
    assert old.cookies.header("http://a.test/x") is None


def test_an_expired_rule_is_not_kept_and_a_clock_behind_adds_no_time(nodes: tuple[Any, Any, FakeClock]) -> None:
    old, new, clock = nodes
    old.robots_store.put("a.test", clock.wall() + 10.0, RULES)
    state = with_settled(old, _bucket("a.test"))
    clock.advance(10.0)
    assert install_settled(new, state) == 0 and new.robots_store.get("a.test", clock.wall()) is None
    ahead = BucketState(3, 16, hosts=(HostClock("a.test"),), settled=(HostSettled("a.test", RULES, 10.0),),
                        settled_wall=clock.wall() + 500.0)  # the old owner's clock ran 500 s ahead
    assert install_settled(new, ahead) == 1
    assert new.robots_store.get("a.test", clock.wall())[0] == pytest.approx(clock.wall() + 10.0)


def test_only_the_buckets_own_hosts_are_installed(nodes: tuple[Any, Any, FakeClock]) -> None:
    _old, new, clock = nodes
    state = BucketState(3, 16, hosts=(HostClock("a.test"),), settled_wall=clock.wall(), settled=(
        HostSettled("a.test", RULES, 50.0), HostSettled("stray.test", RULES, 50.0)))
    assert install_settled(new, state) == 1 and new.robots_store.get("stray.test", clock.wall()) is None


def test_a_node_without_a_jar_hands_over_rules_only(tmp_path: Path) -> None:
    clock = FakeClock()
    old, new = _node(tmp_path, "old", clock, cookies=False), _node(tmp_path, "new", clock, cookies=False)
    old.robots_store.put("a.test", clock.wall() + 5.0, b"D")
    state = with_settled(old, _bucket("a.test"))
    forget_settled(old, ["a.test"])
    assert install_settled(new, state) == 1
    old.robots_store.close()
    new.robots_store.close()


def test_a_robots_store_that_fails_costs_a_robots_request_not_the_handoff(nodes: tuple[Any, Any, FakeClock],
                                                                           caplog: Any) -> None:
    old, new, clock = nodes
    old.robots_store.put("a.test", clock.wall() + 100.0, RULES)
    old.cookies.store("http://a.test/", (("Set-Cookie", "sid=1; Path=/"),))
    state = with_settled(old, _bucket("a.test"))
    old.robots_store.close()  # reads and writes on a closed store fail as sqlite errors do
    assert [(s.host, s.robots) for s in with_settled(old, _bucket("a.test")).settled] == [("a.test", b"")]
    new.robots_store.close()
    assert install_settled(new, state) == 0
    assert new.cookies.header("http://a.test/") == "sid=1"
    assert "not handed over" in caplog.text and "not kept" in caplog.text
