"""The wire's hand-off with its hosts' settled state (type 4): round trips, what older nodes sent, garbage."""

from __future__ import annotations

import struct
import time
from http.cookiejar import Cookie

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.cluster.wire import Handoff, decode, encode_handoff
from webgather.errors import ClusterError
from webgather.fetch.cookies import encode_cookies
from webgather.frontier.bucket import BucketState, HostClock, HostSettled
from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import seen_key
from webgather.recrawl.observe import UrlRecord
from webgather.robots.compact import encode_given_up, encode_rules
from webgather.robots.parse import ALLOW_ALL, RobotsRules
from webgather.urls import fingerprint

OLDER_NODE_HANDOFF = bytes.fromhex(
    "57470102026e3103000000000000000700400001000000000f0001000000687474703a2f2f682e746573742f3101000000010000000000"
    "700001000000060008000000000000000040000000000000f03f000000000400000000000000682e7465737431302e302e302e31")
"""The sample of :func:`_state` as a node before settled state encoded it (type 2), byte for byte."""


def _state(settled: tuple[HostSettled, ...] = (), wall: float = 0.0) -> BucketState:
    items = (CrawlItem("http://h.test/1", fingerprint("http://h.test/1"), 1, 0, 0, 1.0, "page"),)
    keys = np.array([seen_key(7, 1)], dtype=np.uint64)
    return BucketState(7, 64, items, keys, (HostClock("h.test", 2.0, 1.0, 0, "10.0.0.1", 4),), settled, wall)


def _cookie(name: str = "sid", value: str = "s3", domain: str = "h.test") -> Cookie:
    return Cookie(0, name, value, None, False, domain, False, False, "/", True, False, int(time.time()) + 3600,
                  False, None, None, {"HttpOnly": None})


RULES = RobotsRules.from_text("User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n", "webgather")
SETTLED = (HostSettled("h.test", encode_rules(RULES), 3599.5, encode_cookies([_cookie()])),
           HostSettled("other.test", encode_given_up("robots_unavailable", "HTTP 503"), 12.0),
           HostSettled("jar-only.test", b"", 0.0, encode_cookies([_cookie("a", "1", "jar-only.test")])))


def test_an_older_nodes_handoff_reads_with_nothing_settled() -> None:
    message = decode(OLDER_NODE_HANDOFF)
    assert isinstance(message, Handoff) and message.state.settled == () and message.state.settled_wall == 0.0
    assert message.state.hosts == _state().hosts and message.state.items == _state().items


def test_a_handoff_with_nothing_settled_is_what_older_nodes_read() -> None:
    assert encode_handoff("n1", 3, _state()) == OLDER_NODE_HANDOFF
    row = UrlRecord(5, "http://h.test/1")
    assert encode_handoff("n1", 3, _state(), [row])[3] == 3  # rows only: type 3, as before


@pytest.mark.parametrize("rows", [(), (UrlRecord(5, "http://h.test/1"),)])
def test_settled_state_round_trips_with_and_without_rows(rows: tuple[UrlRecord, ...]) -> None:
    payload = encode_handoff("n1", 3, _state(SETTLED, 1_795_000_000.25), rows)
    assert payload[3] == 4
    message = decode(payload)
    assert isinstance(message, Handoff) and message.rows == rows
    assert message.state.settled == SETTLED and message.state.settled_wall == 1_795_000_000.25
    assert message.state.hosts == _state().hosts


hosts = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
robots_blobs = st.one_of(st.just(b""), st.just(b"A"), st.just(b"D"), st.binary(max_size=40).map(lambda b: b"R" + b),
                         st.binary(max_size=40).map(lambda b: b"X" + b))
cookie_blobs = st.one_of(st.just(b""), st.builds(lambda n, v: encode_cookies([_cookie(n, v)]),
                                                st.text("abcxyz", min_size=1, max_size=8), st.text(max_size=20)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.builds(HostSettled, hosts, robots_blobs, st.floats(0, 1e9), cookie_blobs), max_size=6),
       st.floats(0, 4e9))
def test_any_settled_state_round_trips(settled: list[HostSettled], wall: float) -> None:
    message = decode(encode_handoff("n", 1, _state(tuple(settled), wall)))
    assert isinstance(message, Handoff)
    assert message.state.settled == tuple(settled)
    assert message.state.settled_wall == (wall if settled else 0.0)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_every_truncation_and_bit_flip_of_a_settled_handoff_is_handled(data: st.DataObject) -> None:
    good = encode_handoff("n1", 3, _state(SETTLED, 1_795_000_000.0), (UrlRecord(5, "http://h.test/1"),))
    cut = data.draw(st.integers(0, len(good) - 1))
    with pytest.raises(ClusterError):
        decode(good[:cut])
    flipped = bytearray(good)
    flipped[data.draw(st.integers(0, len(good) - 1))] ^= data.draw(st.integers(1, 255))
    try:
        decode(bytes(flipped))
    except ClusterError:
        pass


def _tail(sections: int, settled: bytes) -> bytes:
    """A type-4 hand-off of ``_state()`` with these sections and this settled section."""
    body = OLDER_NODE_HANDOFF[len(b"WG\x01\x02\x02n1") + 8:]
    return b"WG\x01\x04\x02n1" + bytes(8) + body + bytes((sections,)) + settled


def _section(host: bytes, robots: bytes, cookies: bytes, ttl: float, wall: float = 0.0) -> bytes:
    return (struct.pack("<dIHIId", wall, 1, len(host), len(robots), len(cookies), ttl) + host + robots + cookies)


@pytest.mark.parametrize("payload, match", [
    (_tail(0x20, b""), "sections 0x20"),  # bits 2-4 (0x4, 0x8, 0x10): a merge, a relay, an unheld restore
    (_tail(0x02, _section(b"h", b"Q", b"", 1.0)), "compact form"),
    (_tail(0x02, _section(b"h", b"A", b"", -1.0)), "negative"),
    (_tail(0x02, _section(b"h", b"A", b"", float("nan"))), "NaN"),
    (_tail(0x02, _section(b"h", b"A", b"", 1.0, float("inf"))), "infinite"),
    (_tail(0x02, _section(b"", b"A", b"", 1.0)), "without a host"),
    (_tail(0x02, _section(b"h", b"A", b'{"cookies": [[1]]}', 1.0)), "cookies: a cookie must be"),
    (_tail(0x02, _section(b"h", b"A", b"not json", 1.0)), "cookies"),
    (_tail(0x02, _section(b"h", b"A", b"", 1.0) + b"x"), "trailing"),
])
def test_specific_settled_garbage_says_what_is_wrong(payload: bytes, match: str) -> None:
    with pytest.raises(ClusterError, match=match):
        decode(payload)


def test_values_the_wire_cannot_carry_are_refused() -> None:
    with pytest.raises(ClusterError, match="negative"):
        encode_handoff("n", 1, _state((HostSettled("h.test", b"A", -1.0),)))
    with pytest.raises(ClusterError, match="compact form"):
        encode_handoff("n", 1, _state((HostSettled("h.test", b"?", 1.0),)))
    assert ALLOW_ALL.allowed("http://h.test/")
