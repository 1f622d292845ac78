"""decode_body: every coding we offer, the bomb cap, corrupt and unknown data."""

from __future__ import annotations

import gzip
import random
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webgather.errors import DecompressionBomb, FetchTimeout, ProtocolViolation, TruncatedBody
from webgather.fetch import decode
from webgather.fetch.decode import ACCEPT_ENCODING, BROTLI_AVAILABLE, decode_body

TEXT = b"<html>" + b"hello world " * 500 + b"</html>"
MiB = 1024 * 1024


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(wbits=-15)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(
    ("coding", "encoded"),
    [
        (None, TEXT),
        ("identity", TEXT),
        ("gzip", gzip.compress(TEXT)),
        ("x-gzip", gzip.compress(TEXT)),
        ("GZip", gzip.compress(TEXT)),
        ("deflate", zlib.compress(TEXT)),
        ("deflate", raw_deflate(TEXT)),
        ("gzip, deflate", zlib.compress(gzip.compress(TEXT))),  # applied in order, undone in reverse
    ],
)
def test_codings_round_trip(coding: str | None, encoded: bytes) -> None:
    assert decode_body(encoded, coding, MiB) == TEXT


def test_multi_member_gzip_and_zero_padding() -> None:
    data = gzip.compress(b"one ") + gzip.compress(b"two") + b"\0\0\0"
    assert decode_body(data, "gzip", MiB) == b"one two"


def test_bomb_stops_at_the_cap() -> None:
    bomb = gzip.compress(b"\0" * (10 * MiB))
    assert len(bomb) < 20_000
    with pytest.raises(DecompressionBomb, match="1048576"):
        decode_body(bomb, "gzip", MiB)
    with pytest.raises(DecompressionBomb):
        decode_body(zlib.compress(b"\0" * (2 * MiB)), "deflate", MiB)


def test_cap_is_inclusive() -> None:
    exact = b"a" * 1000
    assert decode_body(gzip.compress(exact), "gzip", 1000) == exact
    with pytest.raises(DecompressionBomb):
        decode_body(gzip.compress(exact), "gzip", 999)
    with pytest.raises(DecompressionBomb):
        decode_body(exact, None, 999)  # identity bodies obey the cap too


def test_corrupt_truncated_and_unknown() -> None:
    with pytest.raises(ProtocolViolation, match="corrupt gzip"):
        decode_body(b"\x1f\x8b\x08\x00garbage-garbage-garbage", "gzip", MiB)
    with pytest.raises(TruncatedBody):
        decode_body(gzip.compress(TEXT)[:40], "gzip", MiB)
    with pytest.raises(ProtocolViolation, match="zstd"):
        decode_body(b"x", "zstd", MiB)


def test_accept_encoding_offers_exactly_what_decodes() -> None:
    offered = {c.strip() for c in ACCEPT_ENCODING.split(",")}
    assert offered == ({"gzip", "deflate", "br"} if BROTLI_AVAILABLE else {"gzip", "deflate"})


@pytest.mark.skipif(not BROTLI_AVAILABLE, reason="brotli not installed")
def test_brotli_round_trip_and_bomb() -> None:
    import brotli

    assert decode_body(brotli.compress(TEXT), "br", MiB) == TEXT
    with pytest.raises(DecompressionBomb):
        decode_body(brotli.compress(b"\0" * (10 * MiB), quality=1), "br", MiB)
    with pytest.raises(TruncatedBody):
        decode_body(brotli.compress(TEXT)[:-3], "br", MiB)
    with pytest.raises(ProtocolViolation):
        decode_body(b"\xff" * 64, "br", MiB)


@given(st.binary(max_size=4096), st.sampled_from(["gzip", "deflate", "identity"]))
def test_never_raises_outside_the_tree(data: bytes, coding: str) -> None:
    try:
        decode_body(data, coding, 64 * 1024)
    except (ProtocolViolation, TruncatedBody, DecompressionBomb):
        pass


@given(st.binary(max_size=20_000), st.integers(min_value=1, max_value=30_000))
def test_gzip_round_trip_or_bomb(data: bytes, cap: int) -> None:
    encoded = gzip.compress(data)
    if len(data) <= cap:
        assert decode_body(encoded, "gzip", cap) == data
    else:
        with pytest.raises(DecompressionBomb):
            decode_body(encoded, "gzip", cap)


def test_module_is_pure() -> None:
    source = Path(decode.__file__).read_text(encoding="utf-8")
    for name in ("import asyncio", "import socket", "import aiohttp", "open("):
        assert name not in source


def stored_gzip(data: bytes, layers: int) -> bytes:
    """``layers`` gzip codings, all stored (level 0): every layer is as big as the payload."""
    for _ in range(layers):
        data = gzip.compress(data, compresslevel=0, mtime=0)
    return data


@pytest.mark.parametrize("coding", ["gzip", "deflate", "gzip, deflate"])
def test_an_empty_body_decodes_to_nothing_whatever_its_coding(coding: str) -> None:
    assert decode_body(b"", coding, MiB) == b""  # was truncated (and retried twice)


def test_more_than_three_codings_is_protocol_before_any_work() -> None:
    """Issue 13 item 2: twenty nested gzip layers each got a fresh cap and cost minutes of CPU."""
    nested = gzip.compress(stored_gzip(b"\0" * (4 * MiB), 19), mtime=0)
    started = time.process_time()
    with pytest.raises(ProtocolViolation, match="20 content codings"):
        decode_body(nested, ", ".join(["gzip"] * 20), 50 * MiB)
    assert time.process_time() - started < 0.5
    with pytest.raises(ProtocolViolation, match="4 content codings"):
        decode_body(stored_gzip(TEXT, 4), "gzip, gzip, gzip, gzip", MiB)


def test_three_codings_and_identity_tokens_are_fine() -> None:
    three = gzip.compress(zlib.compress(gzip.compress(TEXT)))
    assert decode_body(three, "gzip, deflate, identity, gzip", MiB) == TEXT
    assert decode_body(stored_gzip(TEXT, 3), "x-gzip,gzip , GZIP", MiB) == TEXT


def test_a_bomb_split_across_codings_hits_one_budget() -> None:
    """Each layer alone is under the cap; together they decode more than it allows."""
    payload = random.Random(7).randbytes(600 * 1024)  # incompressible: the outer layer is as big
    two = stored_gzip(payload, 2)
    assert len(gzip.decompress(two)) < MiB and len(payload) < MiB
    with pytest.raises(DecompressionBomb):
        decode_body(two, "gzip, gzip", MiB)
    assert decode_body(two, "gzip, gzip", 2 * MiB) == payload


def test_decoding_stored_layers_is_linear() -> None:
    """Feeding a whole layer and re-feeding ``unconsumed_tail`` copied the tail on every step."""
    payload = b"\0" * (40 * MiB)
    stored = stored_gzip(payload, 1)
    started = time.process_time()
    assert len(decode_body(stored, "gzip", 64 * MiB)) == len(payload)
    assert time.process_time() - started < 1.5  # measured ~0.1 s; the quadratic decode took seconds


def test_decoding_stops_at_the_deadline() -> None:
    ticks = iter(range(1_000_000))
    deadline = decode.Deadline(lambda: float(next(ticks)), at=5.0, limit_s=5.0)
    with pytest.raises(FetchTimeout, match="total_timeout_s=5"):
        decode_body(gzip.compress(b"\0" * (4 * MiB)), "gzip", 50 * MiB, deadline)
    assert next(ticks) < 10  # stopped within a step of the deadline, not at the end
    roomy = decode.Deadline(lambda: 0.0, at=5.0, limit_s=5.0)
    assert decode_body(gzip.compress(TEXT), "gzip", MiB, roomy) == TEXT


def test_content_encoding_joins_every_field() -> None:
    headers = (("Content-Type", "text/html"), ("content-encoding", "gzip"), ("Content-Encoding", "deflate"))
    assert decode.content_encoding(headers) == "gzip, deflate"
    assert decode.content_encoding((("Content-Type", "text/html"),)) is None
    assert decode_body(zlib.compress(gzip.compress(TEXT)), decode.content_encoding(headers), MiB) == TEXT


def test_zero_padding_then_data_is_corrupt_and_many_members_are_fine() -> None:
    with pytest.raises(ProtocolViolation, match="corrupt gzip"):
        decode_body(gzip.compress(b"a") + b"\0\0" + gzip.compress(b"b"), "gzip", MiB)
    members = b"".join(gzip.compress(b"%d," % i, mtime=0) for i in range(5000))
    assert decode_body(members, "gzip", MiB) == b"".join(b"%d," % i for i in range(5000))
