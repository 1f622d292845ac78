"""The hand-built JSON of the writer's hot path is byte for byte what json.dumps wrote."""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webgather.errors import StoreError
from webgather.store.cdxj import cdxj_line, surt, timestamp14
from webgather.store.crawllog import encode_entry
from webgather.store.linklog import anchor_line
from webgather.store.records import b32_160, sha1_digest

any_text = st.text(st.characters(blacklist_categories=()), max_size=40)  # surrogates and controls included


def _old_cdxj_line(url: str, date: str, mime: str, status: int | None, digest: str, length: int, offset: int, name: str) -> str:
    block = {"url": url, "mime": mime or "unk", "status": "-" if status is None else str(status),
             "digest": digest.removeprefix("sha1:"), "length": str(length), "offset": str(offset), "filename": name}
    return f"{surt(url)} {timestamp14(date)} {json.dumps(block, separators=(',', ':'))}\n"


@given(any_text, any_text, st.none() | st.integers(-1, 999), any_text, st.integers(0, 2**40), st.integers(0, 2**40), any_text)
def test_cdxj_line_is_what_json_dumps_wrote(
    url: str, mime: str, status: int | None, digest: str, length: int, offset: int, name: str
) -> None:
    args = ("http://x.example" + url, "2024-05-01T12:00:00Z", mime, status, digest, length, offset, name)
    assert cdxj_line(*args) == _old_cdxj_line(*args)


link = st.tuples(any_text, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), any_text, st.booleans())


@given(any_text, st.lists(link, max_size=30))
def test_anchor_line_is_what_json_dumps_wrote(src: str, links: list[tuple[str, int, int, str, bool]]) -> None:
    old = json.dumps({"url": src, "links": [[u, t, bool(n)] for u, _, _, t, n in links]}, separators=(",", ":"))
    assert anchor_line(src, links) == old + "\n"


def test_anchor_line_encodes_other_values_as_json_dumps_did() -> None:
    odd: list[Any] = [("http://a/", 1, 2, 7, 1), ("http://b/", 1, 2, None, 0)]
    assert anchor_line("http://s/", odd) == '{"url":"http://s/","links":[["http://a/",7,true],["http://b/",null,false]]}\n'
    with pytest.raises(TypeError):
        anchor_line("http://s/", [("http://a/", 1, 2, {1}, False)])  # type: ignore[list-item]


json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(any_text, json_value, max_size=16))
def test_encode_entry_is_what_the_encoder_wrote(entry: dict[str, Any]) -> None:
    old = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=True).encode(entry)
    assert encode_entry(entry) == old + "\n"


def test_encode_entry_refuses_what_it_refused() -> None:
    circular: dict[str, Any] = {"url": "http://a/"}
    circular["self"] = circular
    for bad in ({"url": "u", "x": math.nan}, {"url": "u", "x": {1}}, circular, {"url": "u", (1, 2): 3}):
        with pytest.raises(StoreError, match="not JSON data"):
            encode_entry(bad)
    assert encode_entry({"url": "u"}) == '{"url":"u"}\n'  # the memo of the failed calls is not reused


@given(st.binary(min_size=20, max_size=20))
def test_b32_160_is_b32encode(digest: bytes) -> None:
    assert b32_160(digest) == base64.b32encode(digest).decode("ascii")


@pytest.mark.parametrize("digest", [b"", b"\x00" * 19, b"\xff" * 21, bytes(range(20)), b"\xff" * 20, b"\x00" * 20])
def test_b32_160_edges_and_other_lengths(digest: bytes) -> None:
    assert b32_160(digest) == base64.b32encode(digest).decode("ascii")


@given(st.binary(max_size=300))
def test_sha1_digest_is_the_warc_form(data: bytes) -> None:
    assert sha1_digest(data) == "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")
