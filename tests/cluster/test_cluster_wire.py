"""The wire format: round trips, exact sizes, and garbage that must become ClusterError."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.cluster.wire import (
    KINDS,
    Handoff,
    UrlBatch,
    decode,
    encode_batch,
    encode_handoff,
)
from webgather.errors import ClusterError
from webgather.frontier.bucket import BucketState, HostClock
from webgather.frontier.model import CrawlItem
from webgather.frontier.seen import FP_MASK, seen_key
from webgather.urls import fingerprint

url_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def crawl_items(draw: st.DrawFn, cross: bool = False) -> CrawlItem:
    url = "http://" + draw(url_text)
    depth = draw(st.integers(0, 0xFFFF))
    priority = float(depth) if cross or draw(st.booleans()) else draw(finite)
    attempt = 0 if cross else draw(st.integers(0, 0xFFFF))
    return CrawlItem(url, fingerprint(url), depth, draw(st.integers(0, 255)), attempt,
                     priority, draw(st.sampled_from(KINDS)))


senders = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60)
seqs = st.integers(0, 2**64 - 1)


@given(senders, seqs, st.lists(crawl_items(), max_size=30))
def test_batch_round_trip(sender: str, seq: int, items: list[CrawlItem]) -> None:
    assert decode(encode_batch(sender, seq, items)) == UrlBatch(sender, seq, tuple(items))


@st.composite
def bucket_states(draw: st.DrawFn) -> BucketState:
    n_buckets = draw(st.integers(1, 4096))
    bucket = draw(st.integers(0, n_buckets - 1))
    fps = draw(st.lists(st.integers(0, FP_MASK), unique=True, max_size=40))
    keys = np.array(sorted(seen_key(bucket, fp) for fp in fps), dtype=np.uint64)
    hosts = draw(st.lists(st.builds(
        HostClock, url_text, st.one_of(st.just(float("inf")), st.floats(0, 1e9)), st.floats(0, 1e6),
        st.integers(0, 2**32 - 1), st.one_of(st.none(), st.text(min_size=1, max_size=40).filter(
            lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))), st.integers(0, 2**64 - 1)), max_size=5))
    return BucketState(bucket, n_buckets, tuple(draw(st.lists(crawl_items(), max_size=10))), keys, tuple(hosts))


@given(senders, seqs, bucket_states())
def test_handoff_round_trip(sender: str, seq: int, state: BucketState) -> None:
    message = decode(encode_handoff(sender, seq, state))
    assert isinstance(message, Handoff) and (message.sender, message.seq) == (sender, seq)
    got = message.state
    assert (got.bucket, got.n_buckets, got.items, got.hosts) == (state.bucket, state.n_buckets, state.items, state.hosts)
    assert got.seen_keys.dtype == np.uint64 and got.seen_keys.tolist() == state.seen_keys.tolist()


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_garbage_is_a_cluster_error(raw: bytes) -> None:
    for payload in (raw, b"WG\x01\x01" + raw, b"WG\x01\x02" + raw):
        try:
            message = decode(payload)
        except ClusterError:
            continue
        assert isinstance(message, (UrlBatch, Handoff))


def _sample_handoff() -> bytes:
    items = tuple(CrawlItem(f"http://h.test/{i}", fingerprint(f"http://h.test/{i}"), i, 0, i % 2, i / 3, "page")
                  for i in range(4))
    keys = np.array([seen_key(7, 1), seen_key(7, 2)], dtype=np.uint64)
    return encode_handoff("n1", 3, BucketState(7, 64, items, keys, (HostClock("h.test", 2.0, 1.0, 0, "10.0.0.1", 4),)))


@settings(max_examples=200)
@given(st.data())
def test_every_truncation_and_bit_flip_of_a_message_is_handled(data: st.DataObject) -> None:
    good = _sample_handoff()
    cut = data.draw(st.integers(0, len(good) - 1))
    with pytest.raises(ClusterError):
        decode(good[:cut])
    pos = data.draw(st.integers(0, len(good) - 1))
    flipped = bytearray(good)
    flipped[pos] ^= data.draw(st.integers(1, 255))
    try:
        decode(bytes(flipped))
    except ClusterError:
        pass


@pytest.mark.parametrize("payload, match", [
    (b"", "truncated"),
    (b"XX\x01\x01\x01a" + bytes(8), "magic"),
    (b"WG\x02\x01\x01a" + bytes(8), "version 2"),
    (b"WG\x01\x09\x01a" + bytes(8), "message type 9"),
    (b"WG\x01\x01\x00" + bytes(8), "sender"),
    (b"WG\x01\x01\x01a" + bytes(8) + struct.pack("<IB", 0, 0) + b"x", "trailing"),
    (b"WG\x01\x01\x01a" + bytes(8) + struct.pack("<IB", 10**9, 0), "truncated"),
    (b"WG\x01\x01\x01a" + bytes(8) + struct.pack("<IB", 0, 0x80), "flags"),
    (b"WG\x01\x01\x01a" + bytes(8) + struct.pack("<IBHHBB", 1, 0, 1, 0, 0, 9) + b"h", "kind code 9"),
    (b"WG\x01\x01\x01a" + bytes(8) + struct.pack("<IBHHBB", 1, 0, 1, 0, 0, 0) + b"\xff", "utf-8"),
    (b"WG\x01\x01\x01a" + bytes(8) + struct.pack("<IBHHBBd", 1, 2, 1, 0, 0, 0, float("nan")) + b"h", "NaN"),
    (b"WG\x01\x02\x01a" + bytes(8) + struct.pack("<HH", 5, 5), "bucket 5 of 5"),
])
def test_specific_garbage_says_what_is_wrong(payload: bytes, match: str) -> None:
    with pytest.raises(ClusterError, match=match):
        decode(payload)


def test_handoff_keys_outside_the_bucket_are_rejected() -> None:
    keys = np.array([seen_key(8, 1)], dtype=np.uint64)  # bucket 8's key in bucket 7's state
    with pytest.raises(ClusterError, match="seen keys"):
        decode(encode_handoff("n", 0, BucketState(7, 64, (), keys, ())))
    unsorted = np.array([seen_key(7, 2), seen_key(7, 1)], dtype=np.uint64)
    with pytest.raises(ClusterError, match="seen keys"):
        decode(encode_handoff("n", 0, BucketState(7, 64, (), unsorted, ())))


def test_last_bucket_of_the_largest_table_round_trips() -> None:
    keys = np.array([seen_key(4095, 0), seen_key(4095, FP_MASK)], dtype=np.uint64)
    state = decode(encode_handoff("n", 0, BucketState(4095, 4096, (), keys, ()))).state  # type: ignore[union-attr]
    assert state.seen_keys.tolist() == keys.tolist()


@pytest.mark.parametrize("item, match", [
    (CrawlItem("http://a/", 0, kind="robots"), "kind"),
    (CrawlItem("http://a/", 0, depth=70000), "depth"),
    (CrawlItem("http://a/", 0, redirects=256), "redirects"),
    (CrawlItem("http://a/", 0, attempt=-1), "attempt"),
    (CrawlItem("http://a/", 0, priority=float("nan")), "NaN"),
    (CrawlItem("", 0), "URL"),
    (CrawlItem("http://a/" + "x" * 70000, 0), "URL"),
])
def test_items_the_wire_cannot_carry_are_refused(item: CrawlItem, match: str) -> None:
    with pytest.raises(ClusterError, match=match):
        encode_batch("n", 0, [item])


def test_bad_headers_are_refused() -> None:
    with pytest.raises(ClusterError, match="sender"):
        encode_batch("", 0, [])
    with pytest.raises(ClusterError, match="sender"):
        encode_batch("x" * 256, 0, [])
    with pytest.raises(ClusterError, match="sequence"):
        encode_batch("n", -1, [])
    with pytest.raises(ClusterError, match="ip"):
        encode_handoff("n", 0, BucketState(0, 1, (), np.empty(0, np.uint64), (HostClock("h", ip=""),)))
    with pytest.raises(ClusterError, match="wait_s"):
        encode_handoff("n", 0, BucketState(0, 1, (), np.empty(0, np.uint64), (HostClock("h", wait_s=-1),)))


def test_a_cross_url_costs_its_bytes_plus_six() -> None:
    urls = [f"https://www.site{i}.example/section/page-{i}.html" for i in range(100)]
    items = [CrawlItem(u, fingerprint(u), 3, 0, 0, 3.0) for u in urls]
    payload = encode_batch("node-1", 17, items)
    header = 2 + 1 + 1 + 1 + len("node-1") + 8 + 4 + 1
    assert len(payload) == header + sum(len(u) + 6 for u in urls)
    opic = [CrawlItem(u, fingerprint(u), 3, 0, 0, -0.25) for u in urls]  # a priority column appears
    assert len(encode_batch("node-1", 17, opic)) == len(payload) + 8 * 100
