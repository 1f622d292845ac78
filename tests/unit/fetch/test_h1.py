"""The pure HTTP/1.1 pieces: request bytes, response heads, body framing, chunked decoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webgather.errors import ProtocolViolation, TruncatedBody
from webgather.fetch import h1


def head(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def test_request_bytes_keep_header_order_and_spelling() -> None:
    raw = h1.request_bytes("/a?b=1", (("Host", "x.test"), ("user-agent", "u/1"), ("Accept", "*/*")))
    assert raw == b"GET /a?b=1 HTTP/1.1\r\nHost: x.test\r\nuser-agent: u/1\r\nAccept: */*\r\n\r\n"


def test_head_end_finds_crlf_and_bare_lf_heads() -> None:
    assert h1.head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody") == 25
    assert h1.head_end(b"HTTP/1.1 200 OK\nA: b\n\nbody") == 22
    assert h1.head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n") == -1


def test_plain_head_with_length() -> None:
    parsed = h1.parse_head(head("HTTP/1.1 200 OK", "Content-Type: text/html", "Content-Length: 12"))
    assert (parsed.status, parsed.reason, parsed.version) == (200, "OK", "1.1")
    assert parsed.headers == (("Content-Type", "text/html"), ("Content-Length", "12"))
    assert (parsed.framing, parsed.length, parsed.keep_alive) == (h1.LENGTH, 12, True)


@pytest.mark.parametrize(
    ("lines", "framing", "keep_alive"),
    [
        (["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"], h1.CHUNKED, True),
        (["HTTP/1.1 200 OK", "Transfer-Encoding: gzip, chunked", "Content-Length: 5"], h1.CHUNKED, False),
        (["HTTP/1.1 200 OK", "Transfer-Encoding: gzip"], h1.UNTIL_CLOSE, False),
        (["HTTP/1.1 200 OK"], h1.UNTIL_CLOSE, False),
        (["HTTP/1.1 204 No Content"], h1.NO_BODY, True),
        (["HTTP/1.1 304 Not Modified", "Content-Length: 99"], h1.NO_BODY, True),
        (["HTTP/1.1 200 OK", "Content-Length: 0"], h1.NO_BODY, True),
        (["HTTP/1.1 200 OK", "Content-Length: 3", "Connection: close"], h1.LENGTH, False),
        (["HTTP/1.0 200 OK", "Content-Length: 3"], h1.LENGTH, False),
        (["HTTP/1.0 200 OK", "Content-Length: 3", "Connection: Keep-Alive"], h1.LENGTH, True),
        (["HTTP/1.1 200 OK", "Content-Length: 3, 3", "Content-Length: 3"], h1.LENGTH, True),
    ],
)
def test_framing_and_persistence(lines: list[str], framing: str, keep_alive: bool) -> None:
    parsed = h1.parse_head(head(*lines))
    assert (parsed.framing, parsed.keep_alive) == (framing, keep_alive)


@pytest.mark.parametrize(
    "lines",
    [
        ["HELLO THERE"], ["HTTP/1.1 abc Weird"], ["HTTP/2.0 200 OK"], ["HTTP/1.1 200 OK", "no colon here"],
        ["HTTP/1.1 200 OK", "Bad Name: x"], ["HTTP/1.1 200 OK", "Content-Length: 3", "Content-Length: 4"],
        ["HTTP/1.1 200 OK", "Content-Length: -1"], ["HTTP/1.1 200 OK", "X-Big: " + "a" * 9000],
        ["HTTP/1.1 200 OK", " folded first"], ["HTTP/1.1 099 Low"],
    ],  # fmt: skip
)
def test_malformed_heads_are_protocol_violations(lines: list[str]) -> None:
    with pytest.raises(ProtocolViolation):
        h1.parse_head(head(*lines))


def test_obsolete_folding_joins_the_value_and_bytes_survive() -> None:
    parsed = h1.parse_head(b"HTTP/1.1 200 \xc3\xa9t\xe9\r\nX-A: one\r\n  two\r\nX-B:\xff\r\n\r\n")
    assert parsed.headers == (("X-A", "one two"), ("X-B", "\udcff"))
    assert parsed.reason.encode("utf-8", "surrogateescape") == b"\xc3\xa9t\xe9"


def test_chunked_body_with_extensions_and_trailers() -> None:
    decoder = h1.Chunked()
    pieces = decoder.feed(b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: y\r\n\r\nNEXT")
    assert b"".join(pieces) == b"hello world" and decoder.done and decoder.rest == b"NEXT"


@pytest.mark.parametrize("raw", [b"zz\r\nxx\r\n", b"5\r\nhelloXX\r\n", b"-1\r\n", b"1" * 9000])
def test_broken_chunking_is_truncated(raw: bytes) -> None:
    with pytest.raises(TruncatedBody):
        h1.Chunked().feed(raw)


@given(st.lists(st.binary(min_size=1, max_size=40), max_size=8), st.lists(st.integers(1, 50), min_size=1))
def test_chunked_decoding_is_independent_of_how_bytes_arrive(chunks: list[bytes], cuts: list[int]) -> None:
    wire = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    decoder, got, at, i = h1.Chunked(), [], 0, 0
    while at < len(wire) and not decoder.done:
        step = cuts[i % len(cuts)]
        got += decoder.feed(wire[at : at + step])
        at, i = at + step, i + 1
    assert decoder.done and b"".join(got) == b"".join(chunks)


def test_a_head_over_64_kib_is_refused_however_it_arrives() -> None:
    """Issue 13 item 3: the cap held only while the head was incomplete; one 100 KB read passed it."""
    fields = [f"X-F{i}: {'v' * 1000}" for i in range(h1.MAX_FIELDS - 2)]
    assert len(head("HTTP/1.1 200 OK", *fields)) > h1.MAX_HEAD_BYTES
    with pytest.raises(ProtocolViolation, match="64 KiB"):
        h1.parse_head(head("HTTP/1.1 200 OK", *fields))
    folded = head("HTTP/1.1 200 OK", "X-A: a", *([" " + "f" * 8000] * 9))  # one field, folded: still the head's bytes
    with pytest.raises(ProtocolViolation, match="64 KiB"):
        h1.parse_head(folded)
    at_cap = head("HTTP/1.1 200 OK", "X-A: " + "a" * 8000)
    assert h1.parse_head(at_cap).status == 200


def test_header_fields_are_capped_at_max_fields() -> None:
    fields = [f"X-F{i}: {i}" for i in range(h1.MAX_FIELDS)]
    assert len(h1.parse_head(head("HTTP/1.1 200 OK", *fields)).headers) == h1.MAX_FIELDS
    with pytest.raises(ProtocolViolation, match=f"over {h1.MAX_FIELDS} header fields"):
        h1.parse_head(head("HTTP/1.1 200 OK", *fields, "X-One-Too-Many: 1"))
    with pytest.raises(ProtocolViolation, match="header fields"):
        h1.parse_head(head("HTTP/1.1 200 OK", *(["Set-Cookie: a=1"] * 2002)))  # the 2,002 fields
