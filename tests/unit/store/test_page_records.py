"""fetch_records (the writer's per-page path) writes byte for byte what the reference builders write."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.config import native_parse_wanted
from webgather.fetch.model import FetchResult
from webgather.store import pagerecords
from webgather.store.pagerecords import NATIVE_DIGESTS, fetch_records, python_digests
from webgather.store.records import request_record, response_record

any_text = st.text(st.characters(blacklist_categories=()), max_size=30)  # CR, LF, surrogates included
header = st.tuples(st.sampled_from(["Host", "Content-Type", "Transfer-Encoding", "X-A"]) | any_text, any_text)
headers = st.lists(header, max_size=6).map(tuple)


def _reference(result: FetchResult, ids: tuple[str, str], date: str, info: str | None) -> tuple[bytes, bytes, str | None]:
    response = response_record(result, ids[0], date, ids[1], info)
    request = request_record(result, ids[1], date, ids[0], info)
    return response.data, request.data, response.payload_digest


@settings(max_examples=300)
@given(
    st.tuples(any_text, any_text), any_text, st.none() | any_text, any_text, any_text,
    st.integers(100, 999), any_text, headers, headers, st.binary(max_size=300), st.booleans(), st.none() | any_text,
    st.sampled_from([None, "truncated", "too_large"]),
)
def test_fetch_records_are_the_reference_bytes(
    ids: tuple[str, str], date: str, info: str | None, path: str, version: str, status: int, reason: str,
    request_headers: tuple[tuple[str, str], ...], response_headers: tuple[tuple[str, str], ...],
    body: bytes, truncated: bool, ip: str | None, error: str | None,
) -> None:
    result = FetchResult(
        url="http://x.example/" + path, started_at=1.7e9, elapsed_s=0.1, status=status, reason=reason,
        http_version=version, request_headers=request_headers, response_headers=response_headers,
        raw_body=body, body=body, truncated=truncated, peer_ip=ip, error=error,
    )
    try:
        expected = _reference(result, ids, date, info)
    except UnicodeEncodeError:  # a lone surrogate outside surrogateescape's range: both refuse it
        with pytest.raises(UnicodeEncodeError):
            fetch_records(result, ids[0], ids[1], date, info)
        return
    for digests in {pagerecords._digests, python_digests}:  # the C digests (when built) and the Python ones
        with _digests_by(digests):
            response, request = fetch_records(result, ids[0], ids[1], date, info)
        assert (response.data, request.data, response.payload_digest) == expected
        assert (response.record_id, response.date, request.record_id, request.payload_digest) == (ids[0], date, ids[1], None)


@contextlib.contextmanager
def _digests_by(digests: Callable[[bytes, bytes, bytes], tuple[str, str, str]]) -> Iterator[None]:
    saved = pagerecords._digests
    pagerecords._digests = digests
    try:
        yield
    finally:
        pagerecords._digests = saved


def test_a_plain_page_takes_the_fast_path_and_matches() -> None:
    result = FetchResult(
        url="http://x.example/a?b=1", started_at=1.7e9, elapsed_s=0.1, status=200, reason="OK",
        request_headers=(("Host", "x.example"), ("Accept", "*/*")),
        response_headers=(("Content-Type", "text/html"), ("Content-Length", "5")),
        raw_body=b"hello", body=b"hello", peer_ip="127.0.0.1",
    )
    response, request = fetch_records(result, "<urn:uuid:1>", "<urn:uuid:2>", "2023-11-14T22:13:20Z", "<urn:uuid:0>")
    assert (response.data, request.data, response.payload_digest) == _reference(
        result, ("<urn:uuid:1>", "<urn:uuid:2>"), "2023-11-14T22:13:20Z", "<urn:uuid:0>"
    )
    assert response.data.startswith(b"WARC/1.1\r\nWARC-Type: response\r\n")


@settings(max_examples=300)
@given(st.binary(max_size=200), st.binary(max_size=5000), st.binary(max_size=300))
def test_native_digests_are_the_python_digests(head: bytes, body: bytes, block: bytes) -> None:
    if NATIVE_DIGESTS is None:
        pytest.skip("webgather._warcdigest is not loaded (WEBGATHER_NATIVE=0, or not built: no C compiler or OpenSSL headers)")
    expected = python_digests(head, body, block)
    assert NATIVE_DIGESTS(head, body, block) == expected
    assert NATIVE_DIGESTS(bytearray(head), memoryview(body), block) == expected  # any bytes-like, as hashlib


def test_python_digests_are_sha1_base32_of_payload_block_and_request() -> None:
    head, body, block = b"HTTP/1.1 200 OK\r\n\r\n", b"<p>x</p>" * 999, b"GET / HTTP/1.1\r\n\r\n"
    want = tuple("sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode() for data in (body, head + body, block))
    assert python_digests(head, body, block) == want


def test_the_native_digests_are_loaded_here() -> None:
    """This machine builds the extension (scripts/setup): a silent fall back to Python would be a regression."""
    if not native_parse_wanted():
        pytest.skip("WEBGATHER_NATIVE=0: the Python digests were asked for")
    if not os.path.exists("/usr/include/openssl/sha.h"):  # scripts/setup installs libssl-dev where it can
        pytest.skip("no OpenSSL headers on this machine: webgather._warcdigest could not be built")
    assert NATIVE_DIGESTS is not None


def test_native_zero_takes_the_python_digests() -> None:
    code = "from webgather.store import pagerecords as p; print(p.NATIVE_DIGESTS is None, p._digests is p.python_digests)"
    env = {**os.environ, "WEBGATHER_NATIVE": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "True"]
