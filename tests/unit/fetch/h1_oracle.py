"""Drive our HTTP/1.1 response parser and llhttp (``httptools``) over the same bytes; compare verdicts.

Used by :mod:`test_h1_differential`. Ours is the real thing: a
:class:`webgather.fetch.h1_conn.Connection` over a fake transport, fed the
pieces through ``data_received`` and then ``connection_lost`` (the server
closes after its last byte). llhttp gets the same pieces through
``feed_data``; httptools exposes no ``llhttp_finish``, so a message still open
at the end is "eof" for llhttp whatever its framing, and ours is mapped the
same way (a body ended by the close and one cut short by it are both "eof").
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httptools

from webgather.errors import FetchError
from webgather.fetch import h1
from webgather.fetch.h1_conn import Connection


@dataclass(frozen=True)
class Verdict:
    outcome: str
    """"complete" (framing ended the message), "eof" (the bytes ran out first) or "error"."""
    status: int | None = None
    body: bytes = b""
    keep_alive: bool | None = None
    """Only for "complete": the connection may carry another request."""
    detail: str = ""


class _Transport(asyncio.Transport):
    def write(self, data: bytes | bytearray | memoryview) -> None:
        return None

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        return None

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default


@dataclass
class _Sink:
    head: h1.ResponseHead | None = None
    pieces: list[bytes] = field(default_factory=list)

    def on_head(self, head: h1.ResponseHead) -> None:
        self.head = head

    def on_body(self, piece: bytes) -> int:
        self.pieces.append(piece)
        return sum(map(len, self.pieces))


async def _ours(pieces: list[bytes]) -> Verdict:
    conn = Connection(("http", "o.test", 80, "127.0.0.1"), max_body_bytes=1 << 30)
    conn.connection_made(_Transport())
    sink = _Sink()
    done = conn.send(b"GET / HTTP/1.1\r\nHost: o.test\r\n\r\n", sink)
    for piece in pieces:
        if done.done():
            break
        conn.data_received(piece)
    by_framing = done.done()
    if not by_framing:
        conn.connection_lost(None)
    exc = done.exception()
    status = sink.head.status if sink.head is not None else None
    body = b"".join(sink.pieces)
    if by_framing and exc is not None:
        return Verdict("error", detail=f"{type(exc).__name__}: {exc}")
    if by_framing:
        assert sink.head is not None
        return Verdict("complete", status, body, sink.head.keep_alive)
    assert exc is None or isinstance(exc, FetchError)
    return Verdict("eof", status, body, detail=str(exc or ""))


def ours(pieces: list[bytes]) -> Verdict:
    return asyncio.run(_ours(pieces))


class _Llhttp:
    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status: int | None = None
        self.body: list[bytes] = []
        self.verdict: Verdict | None = None
        self.phase = "head"
        """Where llhttp is: "head", "body", or "trailer" (a chunk header with no data after it yet)."""

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.phase = "body"

    def on_chunk_header(self) -> None:
        self.phase = "trailer"  # until data comes: only the last chunk is followed by fields, not data

    def on_chunk_complete(self) -> None:
        self.phase = "body"

    def on_body(self, body: bytes) -> None:
        self.phase = "body"
        if self.verdict is None:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.verdict is not None:
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # interim: the final response follows, as ours skips them
            self.status, self.body, self.phase = None, [], "head"
            return
        self.verdict = Verdict("complete", status, b"".join(self.body), self.parser.should_keep_alive())


def llhttp(pieces: list[bytes]) -> Verdict:
    oracle = _Llhttp()
    for piece in pieces:
        try:
            oracle.parser.feed_data(piece)
        except httptools.HttpParserUpgrade:
            return oracle.verdict or Verdict("error", detail="upgrade")
        except httptools.HttpParserError as exc:
            return oracle.verdict or Verdict("error", detail=f"{oracle.phase}: {type(exc).__name__}: {exc}")
        if oracle.verdict is not None:
            return oracle.verdict
    return Verdict("eof", oracle.status, b"".join(oracle.body))
