"""The head's fields by two regex passes (issue 18): a plain head never takes the line-by-line
loop, and wherever the fast path answers, it answers as the loop does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.errors import ProtocolViolation
from webgather.fetch import h1

NGINX_HEAD = (b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Wed, 25 Nov 2026 20:00:00 GMT\r\n"
              b"Content-Type: text/html\r\nContent-Length: 5123\r\nConnection: keep-alive\r\n"
              b"ETag: \"abc-123\"\r\nX-Odd:\t a\tb \t\r\nX-Empty:\r\n\r\n")


def test_a_plain_head_is_read_without_the_line_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    def loop(_lines: list[bytes]) -> h1.Headers:
        raise AssertionError("the line-by-line loop read a plain head")

    monkeypatch.setattr(h1, "_fields", loop)
    head = h1.parse_head(NGINX_HEAD)
    assert head.headers[-3:] == (("ETag", '"abc-123"'), ("X-Odd", "a\tb"), ("X-Empty", ""))
    assert (head.status, head.length, head.keep_alive) == (200, 5123, True)
    assert h1.parse_head(NGINX_HEAD.replace(b"\r\n", b"\n")).headers == head.headers


def test_heads_the_fast_path_declines_still_parse_or_fail_as_before() -> None:
    folded = h1.parse_head(b"HTTP/1.1 200 OK\r\nX-A: one\r\n  two\r\nContent-Length: 0\r\n\r\n")
    assert folded.headers == (("X-A", "one two"), ("Content-Length", "0"))
    assert h1.parse_head(b"HTTP/1.1 204 No Content\r\n\r\n").headers == ()
    with pytest.raises(ProtocolViolation, match="malformed header field"):
        h1.parse_head(b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n")
    many = b"".join(b"X-%d: v\r\n" % n for n in range(h1.MAX_FIELDS + 1))
    with pytest.raises(ProtocolViolation, match="header fields"):
        h1.parse_head(b"HTTP/1.1 200 OK\r\n" + many + b"\r\n")
    with pytest.raises(ProtocolViolation, match="8190"):
        h1.parse_head(b"HTTP/1.1 200 OK\r\nX-Long: " + b"v" * 8200 + b"\r\n\r\n")


_PIECES = st.sampled_from([b"Name", b"x-y", b"A b", b":", b": ", b"\t", b" ", b"v", b"\xc3\xa9", b"\xff", b"(", b"\x7f"])
_LINES = st.lists(st.lists(_PIECES, max_size=8).map(b"".join), max_size=6)


@settings(max_examples=400, deadline=None)
@given(_LINES, st.sampled_from([b"\r\n", b"\n"]))
def test_the_fast_path_agrees_with_the_line_loop(lines: list[bytes], eol: bytes) -> None:
    block = b"".join(line + eol for line in lines) + eol
    fast = h1._plain_fields(block)
    if fast is not None:
        assert fast == h1._fields(block.split(b"\n"))
