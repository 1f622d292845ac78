"""Resolver: resolve file, pure TTL/negative cache, static map, stubbed and real (localhost) lookups."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from webgather.config import FetchConfig
from webgather.errors import ConfigError, DnsFailed
from webgather.fetch.resolver import DnsCache, Resolver, load_resolve_file, parse_resolve_text
from webgather.clock import FakeClock


def test_resolve_file_parses_comments_case_and_ipv6(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("# test web\nH1.Web.Test 127.0.0.1  # first\n\n  h2.web.test. 127.0.0.2\nv6.test ::1\n")
    assert load_resolve_file(path) == {"h1.web.test": "127.0.0.1", "h2.web.test": "127.0.0.2", "v6.test": "::1"}


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("a.test 127.0.0.1\nb.test\n", 2, "expected 'host address'"),
        ("a.test 127.0.0.1 extra\n", 1, "expected"),
        ("# c\n\na.test 127.0.0.300\n", 3, "not an IP address"),
        ("a.test 127.0.0.1\na.test 127.0.0.2\n", 2, "mapped twice"),
        ("http://a.test/ 127.0.0.1\n", 1, "not a host name"),
    ],
)
def test_resolve_file_errors_name_the_line(text: str, line: int, what: str) -> None:
    with pytest.raises(ConfigError, match=rf"hosts:{line}: .*{what}"):
        parse_resolve_text(text, "hosts")


def test_missing_resolve_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read resolve file"):
        load_resolve_file(tmp_path / "absent")


def test_cache_expiry_negative_ttl_and_bound() -> None:
    cache = DnsCache(ttl_s=10.0, negative_ttl_s=2.0, max_entries=2)
    cache.put_address("a", "1.1.1.1", now=0.0)
    cache.put_failure("b", "nxdomain", now=0.0)
    assert cache.get("a", 9.9) is not None and cache.get("a", 10.0) is None
    assert cache.get("b", 1.9) is not None and cache.get("b", 2.0) is None
    cache.put_address("c", "3.3.3.3", 0.0)
    cache.put_address("d", "4.4.4.4", 0.0)
    cache.put_address("e", "5.5.5.5", 0.0)
    assert len(cache) == 2 and cache.get("c", 0.0) is None and cache.get("e", 0.0) is not None
    with pytest.raises(ConfigError):
        DnsCache(ttl_s=-1.0, negative_ttl_s=0.0)


class Stub:
    """A lookup that answers from a dict and counts calls; unknown names fail like NXDOMAIN."""

    def __init__(self, answers: dict[str, list[str]], delay_s: float = 0.0) -> None:
        self.answers, self.delay_s, self.calls = answers, delay_s, 0

    async def __call__(self, host: str) -> list[str]:
        self.calls += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


async def test_static_map_literals_and_cached_lookups() -> None:
    clock = FakeClock()
    stub = Stub({"dyn.test": ["127.0.0.7", "127.0.0.8"]})
    r = Resolver(clock, static={"H1.web.test": "127.0.0.1"}, ttl_s=60.0, lookup=stub)
    assert await r.resolve("h1.web.test") == "127.0.0.1"
    assert await r.resolve("h1.WEB.test.") == "127.0.0.1"
    assert await r.resolve("127.0.0.9") == "127.0.0.9"
    assert await r.resolve("[::1]") == "::1"
    assert stub.calls == 0
    assert await r.resolve("dyn.test") == "127.0.0.7"
    clock.advance(59.0)
    assert await r.resolve("dyn.test") == "127.0.0.7" and stub.calls == 1
    clock.advance(1.0)
    assert await r.resolve("dyn.test") == "127.0.0.7" and stub.calls == 2 == r.lookups


async def test_failures_are_cached_for_the_shorter_ttl() -> None:
    clock = FakeClock()
    stub = Stub({})
    r = Resolver(clock, ttl_s=300.0, negative_ttl_s=5.0, lookup=stub)
    for _ in range(3):
        with pytest.raises(DnsFailed, match="gone.test: Name or service not known"):
            await r.resolve("gone.test")
    assert stub.calls == 1
    stub.answers["gone.test"] = ["127.1.1.1"]
    clock.advance(5.0)
    assert await r.resolve("gone.test") == "127.1.1.1" and stub.calls == 2


async def test_empty_answer_and_slow_lookup_fail() -> None:
    clock = FakeClock()
    r = Resolver(clock, lookup=Stub({"empty.test": []}))
    with pytest.raises(DnsFailed, match="no addresses"):
        await r.resolve("empty.test")
    slow = Resolver(clock, lookup_timeout_s=0.05, lookup=Stub({"slow.test": ["10.0.0.1"]}, delay_s=5.0))
    with pytest.raises(DnsFailed, match="timed out"):
        await slow.resolve("slow.test")


async def test_from_config_reads_the_resolve_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("h1.web.test 127.0.0.5\n")
    config = FetchConfig(resolve_file=str(path), dns_ttl_s=10.0, allow_addresses=("127.0.0.0/8",))
    r = Resolver.from_config(config, FakeClock(), lookup=Stub({}))
    assert r.static == {"h1.web.test": "127.0.0.5"}
    assert await r.resolve("h1.web.test") == "127.0.0.5"


async def test_real_lookup_of_localhost_only() -> None:
    r = Resolver(FakeClock())
    assert await r.resolve("localhost") in ("127.0.0.1", "::1")
    assert r.lookups == 1
