"""Bytes on the wire between nodes: cross-URL batches and bucket hand-offs. Pure.

Every message starts with one header (all integers little-endian)::

    magic b"WG" | version u8 (=1) | type u8 | sender_len u8 | sender utf-8 | seq u64

``type`` is 1 for a :class:`UrlBatch` (cross URLs for one bucket), 2 for a
:class:`Handoff` (a bucket's frontier state moving to its new owner) and 3 for a
hand-off that also carries the bucket's re-crawl records (``Handoff.rows``). ``sender``
is the node id and ``seq`` the sender's message counter (for duplicate
detection and traffic figures; the transport is at-least-once).

Items (the URLs of a batch, the queued items of a hand-off) are stored as
columns, not as records, so a batch costs a handful of ``numpy`` calls::

    count u32 | flags u8 | url_len u16[n] | depth u16[n] | redirects u8[n] | kind u8[n]
    | attempt u16[n] (flags bit 0) | priority f64[n] (flags bit 1) | URLs, utf-8, concatenated

A column that carries nothing is left out: ``attempt`` when every attempt is 0
(always, for cross URLs) and ``priority`` when every priority equals the depth
(breadth-first, the default). So a cross URL costs its own bytes plus 6. The
fingerprint is not sent: the receiver recomputes it (BLAKE2b, ~1 us), which is
cheaper than 8 bytes per URL on the network. A hand-off continues with::

    bucket u16 | n_buckets u16 | items | n_keys u32 | seen keys u64[n_keys]
    | n_hosts u32 | host_len u16[h] | ip_len u16[h] (0: none) | wait_s f64[h]
    | crawl_delay_s f64[h] | errors u32[h] | accepted u64[h] | hosts utf-8 | ips utf-8

and a type-3 hand-off then with ``rows_len u32 | rows`` (:mod:`webgather.recrawl.rows`:
JSON, checked value by value). A hand-off without rows is still sent as type 2,
byte for byte what nodes before the cluster re-crawl read, so a plain crawl
stays compatible with them; type 3 is new (an older node drops it as unknown).

A type-4 hand-off also carries its hosts' settled state (``BucketState.settled``:
robots.txt rules in their compact form with the seconds they stay fresh, and
cookies). After the host clocks comes ``sections u8`` (bit 0: rows, bit 1:
settled), then the rows as in type 3 if bit 0, then::

    settled_wall f64 | n u32 | host_len u16[n] | robots_len u32[n] | cookies_len u32[n]
    | robots_ttl_s f64[n] | hosts utf-8 | robots blobs | cookies blobs

Section bit 2 marks a *merge* hand-off (``Handoff.merge``): the state a node found stored
for a bucket it does not own when it started (it left or died, and came back with the same
``--out``). It is sent as type 4 (with nothing settled: ``sections`` 4, then nothing more
for settled). Such a state may be older than the bucket's current one, so it is merged into
the owner's state and never stands in for it (:func:`webgather.cluster.handoff.releases`).
Section bit 3 marks a *relay* (``Handoff.relay``): the sender lost a bucket it still awaited, so it
has no state to give; its (empty) hand-off names, after the settled section, the node whose
hand-off the new owner is to await instead: ``relay_len u8 | relay utf-8``.
Section bit 4 marks an *unheld* restore (``Handoff.unheld``): sent under a dead node's id for a
bucket that its last checkpoint says it did not hold (it gained the bucket in a table it never
released it in); empty, like a relay, but the node to await is the one the receiver knows held the
bucket before the dead node (:meth:`webgather.cluster.handoff.Ownership.redirect`).

(a robots blob starts with a kind byte of :mod:`webgather.robots.compact`;
cookies are :func:`webgather.fetch.cookies.encode_cookies`' JSON, checked value
by value). A hand-off whose hosts have nothing settled is sent as type 2 or 3,
as before; this node reads every older hand-off (nothing settled: the new owner
asks robots.txt as it always did). An older node drops a type-4 message as
unknown: every node of a crawl runs the same version.

Decoding checks every length against the bytes present before it allocates,
and every value against its domain (kind known, priority not NaN, seen keys
sorted and inside the bucket's key range, no trailing bytes), so garbage of
any kind raises :class:`~webgather.errors.ClusterError` and nothing else.
No pickle: a payload can only ever become these values.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from webgather.cluster.mapping import MAX_BUCKETS
from webgather.errors import ClusterError
from webgather.fetch.cookies import decode_cookies
from webgather.frontier.bucket import BucketState, HostClock, HostSettled
from webgather.frontier.model import MAX_REQUISITE_HOPS, CrawlItem, requisite_kind
from webgather.frontier.seen import bucket_range
from webgather.recrawl.observe import UrlRecord
from webgather.recrawl.rows import decode_rows, encode_rows
from webgather.urls import fingerprints

__all__ = [
    "KINDS",
    "MAX_ITEM_STR_BYTES",
    "MAX_SENDER_BYTES",
    "WIRE_VERSION",
    "Handoff",
    "Message",
    "UrlBatch",
    "decode",
    "encode_batch",
    "encode_handoff",
]

WIRE_VERSION = 1
KINDS = ("page", "sitemap", *(requisite_kind(n) for n in range(1, MAX_REQUISITE_HOPS + 1)))
"""Item kinds that travel; their index is the wire code."""
MAX_SENDER_BYTES = 255
MAX_ITEM_STR_BYTES = 0xFFFF
"""A URL, host or IP longer than this (utf-8 bytes) cannot be encoded."""

_MAGIC = b"WG"
_TYPE_BATCH = 1
_TYPE_HANDOFF = 2
_TYPE_HANDOFF_ROWS = 3
_TYPE_HANDOFF_SECTIONS = 4
_HAS_ROWS = 1
_HAS_SETTLED = 2
_IS_MERGE = 4
_RELAY = 8
_UNHELD = 16
_ROBOTS_KINDS = b"ADRX"
_HAS_ATTEMPT = 1
_HAS_PRIORITY = 2
_HEAD = struct.Struct("<2sBBB")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_F64 = struct.Struct("<d")
_BUCKET = struct.Struct("<HH")
_KIND_CODE = {kind: code for code, kind in enumerate(KINDS)}


@dataclass(frozen=True, slots=True)
class UrlBatch:
    """Cross URLs for one bucket, sent by ``sender`` as its message ``seq``."""

    sender: str
    seq: int
    items: tuple[CrawlItem, ...]


@dataclass(frozen=True, slots=True)
class Handoff:
    """A bucket's frontier state, sent by its old owner to the new one."""

    sender: str
    seq: int
    state: BucketState
    rows: tuple[UrlRecord, ...] = ()
    """The bucket's re-crawl records (empty for a crawl without re-crawl state)."""
    merge: bool = False
    """A restarted node's stored state of a bucket it does not own (module docstring): it may be
    stale, so it is merged into the owner's state and releases an awaited bucket only when its
    sender is the expected one."""
    relay: str = ""
    """Set: not a state (the sender lost the bucket before its awaited hand-off came); the receiver
    awaits the hand-off of this node, the one the sender awaited, instead."""
    unheld: bool = False
    """A dead sender's restore for a bucket it never held (its checkpoints do not list it): not a
    state either; the receiver awaits the bucket's owner before the sender, if it knows it."""


Message = UrlBatch | Handoff


# -- encoding ----------------------------------------------------------------------------


def encode_batch(sender: str, seq: int, items: Sequence[CrawlItem]) -> bytes:
    """One :class:`UrlBatch` as bytes. Values outside the wire's ranges raise ClusterError."""
    return _header(sender, seq, _TYPE_BATCH) + _encode_items(items)


def encode_handoff(sender: str, seq: int, state: BucketState, rows: Sequence[UrlRecord] = (),
                   merge: bool = False, relay: str = "", unheld: bool = False) -> bytes:
    """One :class:`Handoff` as bytes (queued items, seen keys and host clocks of a bucket,
    and its re-crawl records if any; ``merge``, ``relay``, ``unheld``: :class:`Handoff`'s)."""
    if not 0 <= state.bucket < state.n_buckets <= MAX_BUCKETS:
        raise ClusterError(f"bucket {state.bucket} outside 0..{state.n_buckets - 1}")
    keys = np.ascontiguousarray(state.seen_keys, dtype="<u8")
    rows_bytes = encode_rows(rows) if rows else b""
    kind = _TYPE_HANDOFF_SECTIONS if state.settled or merge or relay or unheld else _TYPE_HANDOFF_ROWS if rows else _TYPE_HANDOFF
    parts = [
        _header(sender, seq, kind),
        _BUCKET.pack(state.bucket, state.n_buckets),
        _encode_items(state.items),
        _U32.pack(len(keys)),
        keys.tobytes(),
        _encode_hosts(state.hosts),
    ]
    if kind == _TYPE_HANDOFF_SECTIONS:
        sections = (_HAS_ROWS if rows else 0) | (_HAS_SETTLED if state.settled else 0) | (_IS_MERGE if merge else 0) \
            | (_RELAY if relay else 0) | (_UNHELD if unheld else 0)
        parts.append(bytes((sections,)))
    if rows:
        parts += [_U32.pack(len(rows_bytes)), rows_bytes]
    if state.settled:
        parts.append(_encode_settled(state.settled, state.settled_wall))
    if relay:
        raw = _utf8(relay)
        if len(raw) > MAX_SENDER_BYTES:
            raise ClusterError(f"relay node id must be 1..{MAX_SENDER_BYTES} utf-8 bytes, got {len(raw)}")
        parts.append(bytes((len(raw),)) + raw)
    return b"".join(parts)


def _header(sender: str, seq: int, kind: int) -> bytes:
    raw = _utf8(sender)
    if not 0 < len(raw) <= MAX_SENDER_BYTES:
        raise ClusterError(f"sender id must be 1..{MAX_SENDER_BYTES} utf-8 bytes, got {len(raw)}")
    if not 0 <= seq < 1 << 64:
        raise ClusterError(f"sequence number {seq} outside 0..2**64-1")
    return _HEAD.pack(_MAGIC, WIRE_VERSION, kind, len(raw)) + raw + _U64.pack(seq)


def _encode_items(items: Sequence[CrawlItem]) -> bytes:
    urls = [_utf8(item.url) for item in items]
    try:
        kinds = [_KIND_CODE[item.kind] for item in items]
    except KeyError as exc:
        raise ClusterError(f"item kind {exc.args[0]!r} cannot travel (known: {KINDS})") from None
    depth = _column([item.depth for item in items], "<u2", "depth")
    attempt = _column([item.attempt for item in items], "<u2", "attempt")
    priority = np.array([item.priority for item in items], dtype="<f8")
    if np.isnan(priority).any():
        raise ClusterError("an item's priority is NaN")
    flags = _HAS_ATTEMPT if attempt.any() else 0
    flags |= 0 if np.array_equal(priority, depth.astype("<f8")) else _HAS_PRIORITY
    parts = [
        _U32.pack(len(urls)),
        bytes((flags,)),
        _lengths(urls, "URL").tobytes(),
        depth.tobytes(),
        _column([item.redirects for item in items], "u1", "redirects").tobytes(),
        np.array(kinds, dtype="u1").tobytes(),
    ]
    if flags & _HAS_ATTEMPT:
        parts.append(attempt.tobytes())
    if flags & _HAS_PRIORITY:
        parts.append(priority.tobytes())
    parts.extend(urls)
    return b"".join(parts)


def _encode_hosts(hosts: Sequence[HostClock]) -> bytes:
    names = [_utf8(h.host) for h in hosts]
    ips = [_utf8(h.ip) if h.ip is not None else b"" for h in hosts]
    if any(h.ip == "" for h in hosts):
        raise ClusterError("a host clock's ip is the empty string (use None)")
    waits = np.array([h.wait_s for h in hosts], dtype="<f8")
    delays = np.array([h.crawl_delay_s for h in hosts], dtype="<f8")
    if np.isnan(waits).any() or (waits < 0).any() or not np.isfinite(delays).all() or (delays < 0).any():
        raise ClusterError("a host clock's wait_s or crawl_delay_s is negative, NaN or infinite")
    parts = [
        _U32.pack(len(hosts)),
        _lengths(names, "host", min_len=1).tobytes(),
        _lengths(ips, "ip", min_len=0).tobytes(),
        waits.tobytes(),
        delays.tobytes(),
        _column([h.errors for h in hosts], "<u4", "errors").tobytes(),
        _column([h.accepted for h in hosts], "<u8", "accepted").tobytes(),
    ]
    return b"".join(parts + names + ips)


def _encode_settled(settled: Sequence[HostSettled], wall: float) -> bytes:
    names = [_utf8(h.host) for h in settled]
    ttls = np.array([h.robots_ttl_s for h in settled], dtype="<f8")
    if not np.isfinite(ttls).all() or (ttls < 0).any() or not np.isfinite(wall):
        raise ClusterError("a host's robots TTL or the settled time is negative, NaN or infinite")
    if any(h.robots[:1] not in (b"", *(bytes((k,)) for k in _ROBOTS_KINDS)) for h in settled):
        raise ClusterError("a host's robots state is not in its compact form")
    parts = [
        _F64.pack(wall),
        _U32.pack(len(settled)),
        _lengths(names, "host", min_len=1).tobytes(),
        _column([len(h.robots) for h in settled], "<u4", "robots state length").tobytes(),
        _column([len(h.cookies) for h in settled], "<u4", "cookies length").tobytes(),
        ttls.tobytes(),
    ]
    return b"".join(parts + names + [h.robots for h in settled] + [h.cookies for h in settled])


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _column(values: list[int], dtype: str, name: str) -> npt.NDArray[Any]:
    info = np.iinfo(np.dtype(dtype))
    if values and (min(values) < info.min or max(values) > info.max):
        raise ClusterError(f"{name} outside {info.min}..{info.max}")
    return np.array(values, dtype=dtype)


def _lengths(raws: list[bytes], name: str, min_len: int = 1) -> npt.NDArray[np.uint16]:
    lengths = np.array([len(r) for r in raws], dtype=np.int64)
    if len(lengths) and (lengths.min() < min_len or lengths.max() > MAX_ITEM_STR_BYTES):
        raise ClusterError(f"a {name} must be {min_len}..{MAX_ITEM_STR_BYTES} utf-8 bytes")
    return lengths.astype("<u2")


# -- decoding ----------------------------------------------------------------------------


class _Reader:
    """Cursor over a payload; every read checks the bytes are there."""

    def __init__(self, payload: bytes) -> None:
        self.buf = memoryview(payload)
        self.pos = 0

    def take(self, n: int, what: str) -> memoryview:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise ClusterError(f"truncated message: {what} needs {n} bytes, {self.remaining} left")
        view = self.buf[self.pos:end]
        self.pos = end
        return view

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def unpack(self, fmt: struct.Struct, what: str) -> tuple[Any, ...]:
        return fmt.unpack(self.take(fmt.size, what))

    def array(self, dtype: str, count: int, what: str) -> npt.NDArray[Any]:
        size = np.dtype(dtype).itemsize * count
        return np.frombuffer(self.take(size, what), dtype=dtype)

    def strings(self, lengths: npt.NDArray[Any], what: str) -> list[str]:
        blob = bytes(self.take(int(lengths.sum()), what))
        ends = np.cumsum(lengths).tolist()
        starts = [0, *ends[:-1]] if ends else []
        try:
            if blob.isascii():
                text = blob.decode("ascii")
                return [text[a:b] for a, b in zip(starts, ends, strict=True)]
            return [blob[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, ends, strict=True)]
        except UnicodeDecodeError as exc:
            raise ClusterError(f"{what}: invalid utf-8 ({exc.reason})") from None


def decode(payload: bytes) -> Message:
    """The message in ``payload``; anything malformed raises ClusterError."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise ClusterError(f"payload must be bytes, got {type(payload).__name__}")
    reader = _Reader(bytes(payload))
    magic, version, kind, sender_len = reader.unpack(_HEAD, "header")
    if magic != _MAGIC:
        raise ClusterError(f"not a webgather message (magic {bytes(magic)!r})")
    if version != WIRE_VERSION:
        raise ClusterError(f"wire version {version} not supported (this node speaks {WIRE_VERSION})")
    sender = reader.strings(np.array([sender_len]), "sender")[0]
    if not sender:
        raise ClusterError("message without a sender id")
    (seq,) = reader.unpack(_U64, "sequence number")
    message: Message
    if kind == _TYPE_BATCH:
        message = UrlBatch(sender, seq, _decode_items(reader))
    elif kind in (_TYPE_HANDOFF, _TYPE_HANDOFF_ROWS, _TYPE_HANDOFF_SECTIONS):
        message = _decode_handoff_message(reader, sender, seq, kind)
    else:
        raise ClusterError(f"unknown message type {kind}")
    if reader.remaining:
        raise ClusterError(f"{reader.remaining} trailing bytes after the message")
    return message


def _decode_items(reader: _Reader) -> tuple[CrawlItem, ...]:
    (count,) = reader.unpack(_U32, "item count")
    (flags,) = reader.take(1, "item flags")
    if flags & ~(_HAS_ATTEMPT | _HAS_PRIORITY):
        raise ClusterError(f"unknown item flags {flags:#x}")
    lengths = reader.array("<u2", count, "URL lengths")
    if count and lengths.min() == 0:
        raise ClusterError("an empty URL")
    depth = reader.array("<u2", count, "depths")
    redirects = reader.array("u1", count, "redirects")
    kinds = reader.array("u1", count, "kinds")
    if count and kinds.max() >= len(KINDS):
        raise ClusterError(f"unknown item kind code {int(kinds.max())}")
    attempt = reader.array("<u2", count, "attempts") if flags & _HAS_ATTEMPT else np.zeros(count, "<u2")
    if flags & _HAS_PRIORITY:
        priority = reader.array("<f8", count, "priorities")
        if np.isnan(priority).any():
            raise ClusterError("an item's priority is NaN")
    else:
        priority = depth.astype("<f8")
    urls = reader.strings(lengths, "URLs")
    fps = fingerprints(urls).tolist()
    columns = zip(urls, fps, depth.tolist(), redirects.tolist(), attempt.tolist(),
                  priority.tolist(), kinds.tolist(), strict=True)
    return tuple(CrawlItem(u, f, d, r, a, p, KINDS[k]) for u, f, d, r, a, p, k in columns)


def _decode_handoff(reader: _Reader) -> BucketState:
    bucket, n_buckets = reader.unpack(_BUCKET, "bucket")
    if not 0 <= bucket < n_buckets <= MAX_BUCKETS:
        raise ClusterError(f"hand-off of bucket {bucket} of {n_buckets} (max {MAX_BUCKETS})")
    items = _decode_items(reader)
    (n_keys,) = reader.unpack(_U32, "seen key count")
    keys = reader.array("<u8", n_keys, "seen keys").astype(np.uint64)
    low, high = bucket_range(bucket)
    if n_keys and (int(keys[0]) < low or int(keys[-1]) >= high or (keys[1:] <= keys[:-1]).any()):
        raise ClusterError(f"hand-off seen keys are not sorted, unique keys of bucket {bucket}")
    return BucketState(bucket, n_buckets, items, keys, _decode_hosts(reader))


def _decode_handoff_message(reader: _Reader, sender: str, seq: int, kind: int) -> Handoff:
    state = _decode_handoff(reader)
    sections = _HAS_ROWS if kind == _TYPE_HANDOFF_ROWS else 0
    if kind == _TYPE_HANDOFF_SECTIONS:
        (sections,) = reader.take(1, "hand-off sections")
        if sections & ~(_HAS_ROWS | _HAS_SETTLED | _IS_MERGE | _RELAY | _UNHELD):
            raise ClusterError(f"unknown hand-off sections {sections:#x}")
    rows = _decode_rows(reader) if sections & _HAS_ROWS else ()
    if sections & _HAS_SETTLED:
        wall, settled = _decode_settled(reader)
        state = replace(state, settled=settled, settled_wall=wall)
    relay = ""
    if sections & _RELAY:
        (length,) = reader.take(1, "relay length")
        relay = reader.strings(np.array([length]), "relay")[0]
        if not relay:
            raise ClusterError("a relay without a node id")
    return Handoff(sender, seq, state, rows, bool(sections & _IS_MERGE), relay, bool(sections & _UNHELD))


def _decode_settled(reader: _Reader) -> tuple[float, tuple[HostSettled, ...]]:
    (wall,) = reader.unpack(_F64, "settled time")
    (count,) = reader.unpack(_U32, "settled host count")
    host_len = reader.array("<u2", count, "settled host lengths")
    robots_len = reader.array("<u4", count, "robots state lengths").astype(np.int64)
    cookies_len = reader.array("<u4", count, "cookies lengths").astype(np.int64)
    ttls = reader.array("<f8", count, "robots TTLs")
    if count and host_len.min() == 0:
        raise ClusterError("a hand-off's settled state without a host")
    if not np.isfinite(wall) or not np.isfinite(ttls).all() or (ttls < 0).any():
        raise ClusterError("a hand-off's robots TTL or settled time is negative, NaN or infinite")
    hosts = reader.strings(host_len, "settled hosts")
    robots = [bytes(reader.take(int(n), "robots state")) for n in robots_len.tolist()]
    if any(blob[:1] not in (b"", *(bytes((k,)) for k in _ROBOTS_KINDS)) for blob in robots):
        raise ClusterError("a hand-off's robots state is not in its compact form")
    cookies = [bytes(reader.take(int(n), "cookies")) for n in cookies_len.tolist()]
    for blob in cookies:
        try:
            if blob:
                decode_cookies(blob)
        except ValueError as exc:
            raise ClusterError(f"hand-off cookies: {exc}") from None
    columns = zip(hosts, robots, ttls.tolist(), cookies, strict=True)
    return float(wall), tuple(HostSettled(h, r, t, c) for h, r, t, c in columns)


def _decode_rows(reader: _Reader) -> tuple[UrlRecord, ...]:
    (size,) = reader.unpack(_U32, "re-crawl rows length")
    try:
        return decode_rows(bytes(reader.take(size, "re-crawl rows")))
    except ValueError as exc:
        raise ClusterError(f"hand-off: {exc}") from None


def _decode_hosts(reader: _Reader) -> tuple[HostClock, ...]:
    (count,) = reader.unpack(_U32, "host count")
    host_len = reader.array("<u2", count, "host lengths")
    ip_len = reader.array("<u2", count, "ip lengths")
    if count and host_len.min() == 0:
        raise ClusterError("a hand-off host clock without a host")
    waits = reader.array("<f8", count, "waits")
    delays = reader.array("<f8", count, "crawl delays")
    if np.isnan(waits).any() or (waits < 0).any() or not np.isfinite(delays).all() or (delays < 0).any():
        raise ClusterError("a hand-off host clock has a negative, NaN or infinite time")
    errors = reader.array("<u4", count, "error counts").tolist()
    accepted = reader.array("<u8", count, "accepted counts").tolist()
    hosts = reader.strings(host_len, "hosts")
    ips = reader.strings(ip_len, "ips")
    columns = zip(hosts, waits.tolist(), delays.tolist(), errors, ips, accepted, strict=True)
    return tuple(HostClock(h, w, d, e, ip or None, a) for h, w, d, e, ip, a in columns)
