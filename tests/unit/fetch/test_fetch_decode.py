"""decode_body: every coding we offer, the bomb cap, corrupt and unknown data."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webgather.errors import DecompressionBomb, ProtocolViolation, TruncatedBody
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
    with pytest.raises(TruncatedBody):
        decode_body(b"", "gzip", MiB)
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
