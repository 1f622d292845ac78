"""HTTP/1.1 connections as asyncio protocols, and the pool that keeps them alive between requests.

The IO shell around :mod:`webgather.fetch.h1`. A :class:`Connection` carries
one request at a time: ``send`` writes it and returns a future that ends when
the body has ended (or failed); what arrived meanwhile goes straight into the
caller's :class:`Sink` as it comes (the head once, then body pieces), so a
failure mid-body still leaves the prefix for the archive. Each step of a
response is one ``data_received`` call: no task, stream or queue per request,
which is what makes this cheaper per fetch than aiohttp's client.

Where a connection is in its life is one :class:`State`; it moves only along
the steps of :data:`STEPS` (any other step is a bug of ours, and raises)::

    FRESH ---send---> AWAITING_HEAD ---final head---> READING_BODY
    FRESH ---bytes, then an end---> ENDED_EARLY ---send (they answer it)---> AWAITING_HEAD
    AWAITING_HEAD or READING_BODY ---the response ends---> REUSABLE       kept alive
                                                           MUST_CLOSE     Connection: close; answered early
                                                           STRAY          more bytes right behind it
                                                           CLOSED         its failure; a close-delimited end
    REUSABLE ---send---> AWAITING_HEAD
    REUSABLE, MUST_CLOSE ---bytes nobody asked for---> STRAY;  ---either side closes---> CLOSED

Only a REUSABLE connection carries another request (a FRESH or ENDED_EARLY one
its first); STRAY and CLOSED are ends.

:class:`Pool` keeps idle connections per origin and address (last in, first
out), closes those idle longer than ``idle_timeout_s``, and keeps at most
``max_idle`` of them, closing the oldest first. (Capping idle and busy
together at the request concurrency made a crawl of 400 hosts at 256 requests
in flight reconnect on a quarter of its requests.)
"""

from __future__ import annotations

import asyncio
import enum
import select
from collections import OrderedDict
from typing import Protocol

from webgather.errors import BodyTooLarge, ConnectionReset, FetchError, FetchTimeout, ProtocolViolation, TruncatedBody
from webgather.fetch import h1

__all__ = ["MAX_INTERIM", "STEPS", "Connection", "Pool", "PoolKey", "Sink", "State"]

MAX_INTERIM = 8
"""Informational (1xx) responses accepted before the final one: a server sending them without end cost
58 s of CPU and starved the other fetches. (Servers send one 100 Continue or a 103 Early Hints or two.)"""

PoolKey = tuple[str, str, int, str, str]
"""(scheme, host, port, address, via): a connection serves one origin at one address; through a proxy
(``via`` names it) the address is the proxy's."""


class State(enum.Enum):
    """Where a :class:`Connection` is; :data:`STEPS` says where it may go from each."""

    FRESH = "fresh"
    """Open, no request sent yet: bytes that come now are kept as the answer to the first request (the
    event loop may deliver a server's greeting before the fetch's task writes its request)."""
    ENDED_EARLY = "ended early"
    """No request sent yet, and the connection ended after bytes came (the server closed it, or we did:
    more came than a response may hold). Those bytes still answer the first request."""
    AWAITING_HEAD = "awaiting head"
    """A request went out; its response's head (and any 1xx heads before it) is being read."""
    READING_BODY = "reading body"
    """The final head is read; its body is coming."""
    REUSABLE = "reusable"
    """The response ended and the connection may carry another request."""
    MUST_CLOSE = "must close"
    """The response ended and the connection may not carry another: the server said ``Connection: close``
    (or spoke HTTP/1.0), or its answer came before the request."""
    STRAY = "stray"
    """Closed because bytes came that no request accounts for: the framing of what came before is in doubt."""
    CLOSED = "closed"
    """Closed by either side; a response cut short by it has failed."""

    __hash__ = object.__hash__
    """By identity (members are singletons): Enum's own hashes the name in Python code, and every step
    looks its state up in :data:`STEPS`."""


# The members by their bare names, for the code below: ``State.FRESH`` costs 150 ns on Python 3.11 (enum
# members are descriptors there), a global 17 ns, and a fetch passes a dozen such tests.
FRESH = State.FRESH
ENDED_EARLY = State.ENDED_EARLY
AWAITING_HEAD = State.AWAITING_HEAD
READING_BODY = State.READING_BODY
REUSABLE = State.REUSABLE
MUST_CLOSE = State.MUST_CLOSE
STRAY = State.STRAY
CLOSED = State.CLOSED

STEPS: dict[State, frozenset[State]] = {
    FRESH: frozenset({AWAITING_HEAD, ENDED_EARLY, CLOSED}),
    ENDED_EARLY: frozenset({AWAITING_HEAD}),
    AWAITING_HEAD: frozenset({READING_BODY, REUSABLE, MUST_CLOSE, STRAY, CLOSED}),
    READING_BODY: frozenset({REUSABLE, MUST_CLOSE, STRAY, CLOSED}),
    REUSABLE: frozenset({AWAITING_HEAD, STRAY, CLOSED}),
    MUST_CLOSE: frozenset({STRAY, CLOSED}),
    STRAY: frozenset(),
    CLOSED: frozenset({STRAY}),
}
"""The steps a connection may take from each state. A response ending goes to REUSABLE, MUST_CLOSE or
(bytes right behind it) STRAY; a failure to CLOSED. CLOSED -> STRAY: bytes still delivered after our close
(TLS may flush what it had decrypted)."""

_OPEN_ENDED = (REUSABLE, MUST_CLOSE)
"""A response ended and the connection is still open."""
_GONE = (STRAY, CLOSED)
"""Closed for good: nothing more is sent or read."""


class Sink(Protocol):
    """Where a response goes as it arrives."""

    def on_head(self, head: h1.ResponseHead) -> None: ...

    def on_body(self, piece: bytes) -> int:
        """Take a piece; return the body bytes taken so far."""
        ...


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection; see the module docstring."""

    def __init__(self, key: PoolKey, max_body_bytes: int) -> None:
        self.key = key
        self.peer_ip: str | None = None
        self.idle_since = 0.0
        self.uses = 0
        """Requests sent on this connection: from the second on, it is a kept-alive one."""
        self.answer_bytes = 0
        """Bytes of an answer to the latest request so far: while none came, that request may go out again."""
        self.early_bytes = 0
        """Bytes of the answer that came before the latest request went out (then the connection is not reused)."""
        self._state = FRESH
        self._settling: asyncio.Future[None] | None = None
        self._early = bytearray()
        """Bytes that came in FRESH: the answer to the first request."""
        self._lost: tuple[Exception | None] | None = None
        """How the connection ended in ENDED_EARLY, if the event loop has said so: replayed after the answer."""
        self._max_body_bytes = max_body_bytes
        self._transport: asyncio.Transport | None = None
        self._poller: select.poll | None = None
        """The socket registered for reading, from the first :meth:`has_unread_bytes` until the transport closes."""
        self._done: asyncio.Future[None] | None = None
        self._sink: Sink | None = None
        self._buffer = bytearray()
        """The head so far: grown in place and searched only where new bytes came (a head
        trickling in one byte per read cost 3.4 s of CPU when each read copied and rescanned it)."""
        self._head: h1.ResponseHead | None = None
        self._interims = 0
        self._interim_bytes = 0
        """1xx heads read before this response's, and their bytes."""
        self._left = 0
        self._chunked: h1.Chunked | None = None

    @property
    def state(self) -> State:
        return self._state

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer_ip = str(peer[0]) if peer else None

    def send(self, request: bytes, sink: Sink) -> asyncio.Future[None]:
        """Write ``request``; the future ends with the response's body (or its failure).
        :class:`ConnectionReset` at once if the connection is closed and holds no early answer."""
        assert self._transport is not None
        self.answer_bytes = 0
        early = self._early
        if self._state in _GONE or (not early and self._transport.is_closing()):
            self.close()
            raise ConnectionReset("connection closed before the request went out")
        self._to(AWAITING_HEAD)  # from REUSABLE, FRESH or ENDED_EARLY only
        self.uses += 1
        self.early_bytes = len(early)
        self._done = done = asyncio.get_running_loop().create_future()
        self._sink, self._buffer, self._head = sink, bytearray(), None
        self._interims = self._interim_bytes = 0
        if not self._transport.is_closing():
            self._transport.write(request)
        if early:  # the server answered as the connection opened: that answer is this request's
            self._early = bytearray()
            self.data_received(bytes(early))
            if self._lost is not None:
                self.connection_lost(self._lost[0])
        return done

    def data_received(self, data: bytes) -> None:
        self.answer_bytes += len(data)
        state = self._state
        if state is AWAITING_HEAD or state is READING_BODY:
            done = self._done
            if done is not None and not done.done():
                try:
                    if state is AWAITING_HEAD:
                        self._read_head(data)
                    else:
                        self._read_body(data)
                except FetchError as exc:
                    self._fail(exc)
                return
        elif state is FRESH or state is ENDED_EARLY:  # no request sent yet
            self._early += data
            if state is FRESH and len(self._early) > h1.MAX_HEAD_BYTES + self._max_body_bytes:
                self.close()  # more than any response may hold: stop reading, answer the request with it
            return
        self._stray()  # bytes nobody asked for (or for an abandoned request): this connection's framing is lost

    def eof_received(self) -> bool:
        return False  # close our side too: HTTP/1.1 has no use for a half-open connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._poller = None
        state = self._state
        if state is FRESH or state is ENDED_EARLY:
            if self._early:  # the answer came, then the end: both for the request about to go out
                self._lost = (exc,)
                if state is FRESH:
                    self._to(ENDED_EARLY)
            else:
                self._to(CLOSED)
            return
        if self._done is None or self._done.done():
            if state not in _GONE:
                self._to(CLOSED)
            return
        head = self._head
        if head is not None and head.framing == h1.UNTIL_CLOSE and exc is None:
            self._finish(until_close=True)
        elif head is not None and head.framing == h1.UNTIL_CLOSE:  # a reset is no end of the body
            self._fail(TruncatedBody(f"connection reset before the end of a close-delimited body{_cause(exc)}"))
        elif head is not None:
            self._fail(TruncatedBody(f"connection closed mid-body{_cause(exc)}"))
        else:
            self._fail(ConnectionReset(f"connection closed before a response{_cause(exc)}"))

    def time_out(self, seconds: float) -> None:
        """The request's deadline has passed: fail it and drop the connection."""
        if self._done is not None and not self._done.done():
            self._fail(FetchTimeout(f"no complete response within {seconds:g} s"))

    def close(self) -> None:
        """Drop the connection. A response still being read fails (``reset``); an answer that came before
        the first request stays for it."""
        if self._done is not None and not self._done.done():
            self._fail(ConnectionReset("connection closed by webgather mid-response"))
            return
        if self._state is FRESH:
            self._to(ENDED_EARLY if self._early else CLOSED)
        elif self._state is not ENDED_EARLY and self._state not in _GONE:
            self._to(CLOSED)
        self._close_transport()

    def has_unread_bytes(self) -> bool:
        """The socket holds bytes (or an end) the event loop has not delivered yet: checked before a
        kept-alive connection carries another request, as a response there would predate it."""
        poller = self._poller
        if poller is None:  # one per connection, not per check (3.2 us each; a poll on a kept one is 1.1 us)
            sock = self._transport.get_extra_info("socket") if self._transport is not None else None
            if sock is None or sock.fileno() < 0:  # none, or closed already: nothing more will come
                return False
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLIN)
            if self._transport is not None and not self._transport.is_closing():
                self._poller = poller  # kept only while open: a closed socket's number may go to another
        return bool(poller.poll(0))

    async def settle(self, seconds: float) -> None:
        """Watch the connection for ``seconds`` after a response on a kept-alive connection ended;
        :class:`ConnectionReset` if bytes nobody asked for arrive meanwhile (the response just read
        may be one meant for an earlier request, and what arrives now the answer to ours)."""
        if self._state in _OPEN_ENDED:
            loop = asyncio.get_running_loop()
            self._settling = waiter = loop.create_future()
            timer = loop.call_later(seconds, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._settling = None
        if self._state in _OPEN_ENDED and self.has_unread_bytes():  # came, not yet delivered
            self._stray()
        if self._state is STRAY:
            raise ConnectionReset("bytes after the response on a kept-alive connection: its framing is in doubt")

    def _to(self, state: State) -> None:
        """Take the step to ``state``; :class:`ProtocolViolation` if :data:`STEPS` has no such step (a bug
        of ours, not the server's: the response fails rather than the connection be misused)."""
        if state not in STEPS[self._state]:
            raise ProtocolViolation(f"internal: an HTTP/1.1 connection may not go from {self._state.value} "
                                    f"to {state.value}")
        self._state = state

    def _stray(self) -> None:
        if self._state is not STRAY:
            self._to(STRAY)
        self._close_transport()
        if self._settling is not None:
            _wake(self._settling)

    def _close_transport(self) -> None:
        self._poller = None  # its socket's number is free for another once the transport lets it go
        if self._transport is not None:
            self._transport.close()

    def _read_head(self, data: bytes) -> None:
        buffer: bytes | bytearray = data
        scan_from = 0
        if self._buffer:
            scan_from = len(self._buffer) - 3  # a blank line may straddle the old bytes and the new
            self._buffer += data
            buffer = self._buffer
        while True:
            end = h1.head_end(buffer, max(0, scan_from))
            if end < 0:
                if self._interim_bytes + len(buffer) > h1.MAX_HEAD_BYTES:
                    raise ProtocolViolation("response head over 64 KiB")
                self._buffer = buffer if isinstance(buffer, bytearray) else bytearray(buffer)
                return
            if self._interim_bytes + end > h1.MAX_HEAD_BYTES:
                raise ProtocolViolation("response head over 64 KiB")
            head, problem = h1.read_head(bytes(buffer[:end]))
            if problem and head.status >= 200:  # sound but for its framing: archived, then refused
                assert self._sink is not None
                self._sink.on_head(head)
                raise ProtocolViolation(problem)
            if head.status >= 200:
                break
            self._interim(head, end)
            buffer, scan_from = buffer[end:], 0
        self._buffer = bytearray()
        self._head = head
        assert self._sink is not None
        self._sink.on_head(head)
        self._left = head.length
        self._chunked = h1.Chunked() if head.framing == h1.CHUNKED else None
        if head.framing == h1.NO_BODY:
            self._finish(extra=end < len(buffer))
            return
        self._to(READING_BODY)
        if end < len(buffer):
            self._read_body(bytes(buffer[end:]))

    def _interim(self, head: h1.ResponseHead, size: int) -> None:
        """A 1xx head of ``size`` bytes (100 Continue, 103 Early Hints: a final response follows): at
        most :data:`MAX_INTERIM` of them, their bytes counted in the head's 64 KiB."""
        if head.status == 101:
            raise ProtocolViolation("101 Switching Protocols to a request that asked for none")
        self._interims += 1
        self._interim_bytes += size
        if self._interims > MAX_INTERIM:
            raise ProtocolViolation(f"over {MAX_INTERIM} informational (1xx) responses before the response")

    def _read_body(self, data: bytes) -> None:
        head = self._head
        assert head is not None and self._sink is not None
        if head.framing == h1.LENGTH:
            piece = data[: self._left]
            self._left -= len(piece)
            self._take(piece)
            if not self._left:
                self._finish(extra=len(piece) < len(data))
        elif self._chunked is not None:
            for piece in self._chunked.feed(data):
                self._take(piece)
            if self._chunked.done:
                self._finish(extra=bool(self._chunked.rest))
        else:
            self._take(data)

    def _take(self, piece: bytes) -> None:
        assert self._sink is not None
        if piece and self._sink.on_body(piece) > self._max_body_bytes:
            raise BodyTooLarge(f"body over max_body_bytes={self._max_body_bytes}; "
                               f"kept the first {self._max_body_bytes} bytes")

    def _finish(self, *, extra: bool = False, until_close: bool = False) -> None:
        """The response has ended; ``extra``: bytes followed it in the same read; ``until_close``: the
        connection's end ended it."""
        head = self._head
        assert head is not None
        if extra:
            self._stray()
        elif until_close:
            self._to(CLOSED)
        elif self.early_bytes or not head.keep_alive:
            self._to(MUST_CLOSE)
        else:
            self._to(REUSABLE)
        done, self._done, self._sink = self._done, None, None
        if done is not None and not done.done():
            done.set_result(None)

    def _fail(self, exc: FetchError) -> None:
        done, self._done, self._sink = self._done, None, None
        if self._state not in _GONE:
            self._to(CLOSED)
        self._close_transport()
        if done is not None and not done.done():
            done.set_exception(exc)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _cause(exc: Exception | None) -> str:
    return f": {exc}" if exc is not None and str(exc) else ""


class Pool:
    """Idle connections by :data:`PoolKey`; see the module docstring."""

    def __init__(self, max_idle: int, idle_timeout_s: float = 15.0) -> None:
        self.max_idle = max_idle
        self.idle_timeout_s = idle_timeout_s
        self.busy = 0
        self._idle: dict[PoolKey, list[Connection]] = {}
        self._by_age: OrderedDict[Connection, None] = OrderedDict()

    def take(self, key: PoolKey, now: float) -> Connection | None:
        """An idle live connection for ``key`` (marked busy), or None."""
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()
            self._by_age.pop(conn, None)
            if conn.state is REUSABLE and now - conn.idle_since < self.idle_timeout_s:
                self.busy += 1
                return conn
            conn.close()
        return None

    def opening(self) -> None:
        """A connection is being opened for a request: it counts as busy until :meth:`give_back`,
        or :meth:`not_opened` if it never opens."""
        self.busy += 1

    def not_opened(self) -> None:
        """The connection counted by :meth:`opening` failed to open."""
        self.busy -= 1

    def give_back(self, conn: Connection, now: float) -> None:
        """End a request on ``conn``: keep it idle if it can carry another, else close it."""
        self.busy -= 1
        if conn.state is not REUSABLE:
            conn.close()
            return
        conn.idle_since = now
        self._idle.setdefault(conn.key, []).append(conn)
        self._by_age[conn] = None
        self._expire(now)

    @property
    def idle(self) -> int:
        return len(self._by_age)

    def close_all(self) -> None:
        for conn in list(self._by_age):
            conn.close()
        self._by_age.clear()
        self._idle.clear()

    def _expire(self, now: float) -> None:
        while self._by_age:
            oldest = next(iter(self._by_age))
            fresh = now - oldest.idle_since < self.idle_timeout_s and oldest.state is REUSABLE
            if fresh and len(self._by_age) <= self.max_idle:
                return
            del self._by_age[oldest]
            self._forget(oldest)
            oldest.close()

    def _forget(self, conn: Connection) -> None:
        stack = self._idle.get(conn.key)
        if stack is not None:
            stack.remove(conn)
            if not stack:
                del self._idle[conn.key]
