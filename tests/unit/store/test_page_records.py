"""fetch_records (the writer's per-page path) writes byte for byte what the reference builders write."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.fetch.model import FetchResult
from webgather.store.pagerecords import fetch_records
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
)
def test_fetch_records_are_the_reference_bytes(
    ids: tuple[str, str], date: str, info: str | None, path: str, version: str, status: int, reason: str,
    request_headers: tuple[tuple[str, str], ...], response_headers: tuple[tuple[str, str], ...],
    body: bytes, truncated: bool, ip: str | None,
) -> None:
    result = FetchResult(
        url="http://x.example/" + path, started_at=1.7e9, elapsed_s=0.1, status=status, reason=reason,
        http_version=version, request_headers=request_headers, response_headers=response_headers,
        raw_body=body, body=body, truncated=truncated, peer_ip=ip,
    )
    try:
        expected = _reference(result, ids, date, info)
    except UnicodeEncodeError:  # a lone surrogate outside surrogateescape's range: both refuse it
        with pytest.raises(UnicodeEncodeError):
            fetch_records(result, ids[0], ids[1], date, info)
        return
    response, request = fetch_records(result, ids[0], ids[1], date, info)
    assert (response.data, request.data, response.payload_digest) == expected
    assert (response.record_id, response.date, request.record_id, request.payload_digest) == (ids[0], date, ids[1], None)


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
