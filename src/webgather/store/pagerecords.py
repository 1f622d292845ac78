"""A fetch's response and request records in one call: the writer's per-page hot path. Pure.

The bytes are exactly those of :func:`.records.response_record` and
:func:`.records.request_record` (the reference, kept for every other record
and tested against this one); what differs is how they are built:

- each WARC head is one f-string instead of a list of field pairs joined
  by a generator, with the CR/LF clean-up (:func:`.records._field`) done per
  value only where a value could carry one;
- the HTTP header lines are joined once and checked for a stray CR or LF
  with two counts (a clean header set has exactly one of each per line);
  only a set that has one, or may have a Transfer-Encoding, takes the
  reference path;
- the three digests (payload, response block, request block) come from one
  call: the C ``webgather._warcdigest`` when built (setup.py, optional; it
  keeps the GIL, where hashlib drops and retakes it twice a page, and
  base32-encodes in C), else :func:`python_digests`; the block is hashed
  as head then body, not as their concatenation (a 13 KB copy a page);
- each record is joined once from its parts.

SHA-1 cannot be resumed, so the payload is still hashed twice (once alone,
once as the end of the block).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from webgather.config import native_parse_wanted
from webgather.fetch.model import FetchResult, Headers
from webgather.store.records import WarcRecord, b32_160, http_request_block, http_response_head
from webgather.urls import path_of

__all__ = ["NATIVE_DIGESTS", "fetch_records", "python_digests"]

_CR_LF = str.maketrans({"\r": " ", "\n": " "})


def fetch_records(
    result: FetchResult, response_id: str, request_id: str, date: str, warcinfo_id: str | None
) -> tuple[WarcRecord, WarcRecord]:
    """(response record, request record) of ``result`` (which has a status), as
    ``response_record(result, response_id, date, request_id, warcinfo_id)`` and
    ``request_record(result, request_id, date, response_id, warcinfo_id)`` build them."""
    url, ip = _clean(result.url), result.peer_ip
    common = f"WARC-Date: {_clean(date)}\r\nWARC-Target-URI: {url}\r\n"
    tail = "" if warcinfo_id is None else f"WARC-Warcinfo-ID: {_clean(warcinfo_id)}\r\n"
    if ip:
        tail += f"WARC-IP-Address: {_clean(ip)}\r\n"
    response_ref, request_ref = _clean(response_id), _clean(request_id)
    head, body, block = _response_head(result), result.raw_body, _request_block(result)
    payload_digest, block_digest, request_digest = _digests(head, body, block)
    truncated = "WARC-Truncated: length\r\n" if result.truncated else ""
    if result.error == "truncated" and not result.truncated:  # the connection cut the body
        truncated = "WARC-Truncated: disconnect\r\n"
    response_head = (
        f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: {response_ref}\r\n{common}"
        f"Content-Type: application/http;msgtype=response\r\n{tail}WARC-Concurrent-To: {request_ref}\r\n"
        f"WARC-Block-Digest: {block_digest}\r\nWARC-Payload-Digest: {payload_digest}\r\n"
        f"{truncated}Content-Length: {len(head) + len(body)}\r\n\r\n"
    )
    request_head = (
        f"WARC/1.1\r\nWARC-Type: request\r\nWARC-Record-ID: {request_ref}\r\n{common}"
        f"Content-Type: application/http;msgtype=request\r\n{tail}WARC-Concurrent-To: {response_ref}\r\n"
        f"WARC-Block-Digest: {request_digest}\r\nContent-Length: {len(block)}\r\n\r\n"
    )
    response = b"".join((response_head.encode("utf-8", "surrogateescape"), head, body, b"\r\n\r\n"))
    request = b"".join((request_head.encode("utf-8", "surrogateescape"), block, b"\r\n\r\n"))
    return (WarcRecord(response, response_id, date, payload_digest), WarcRecord(request, request_id, date, None))


def python_digests(head: bytes, body: bytes, request_block: bytes) -> tuple[str, str, str]:
    """``sha1:<BASE32>`` of the payload ``body``, of the response block ``head + body``
    (hashed as two updates: no 13 KB concatenation) and of ``request_block``:
    the reference of the C ``webgather._warcdigest.digests``."""
    hasher = hashlib.sha1(head)
    hasher.update(body)
    return (
        "sha1:" + b32_160(hashlib.sha1(body).digest()),
        "sha1:" + b32_160(hasher.digest()),
        "sha1:" + b32_160(hashlib.sha1(request_block).digest()),
    )


def _native_digests() -> Callable[[bytes, bytes, bytes], tuple[str, str, str]] | None:
    if not native_parse_wanted():  # WEBGATHER_NATIVE=0: every native part off, for the fallback's figures
        return None
    try:
        from webgather import _warcdigest
    except ImportError:  # not built (no compiler or no OpenSSL headers): the Python path
        return None
    digests: Callable[[bytes, bytes, bytes], tuple[str, str, str]] = _warcdigest.digests
    return digests


NATIVE_DIGESTS = _native_digests()
"""The C digests when built (and ``WEBGATHER_NATIVE`` is not ``0``), else None: then :func:`python_digests`."""
_digests = NATIVE_DIGESTS or python_digests


def _response_head(result: FetchResult) -> bytes:
    lines = _lines(result.response_headers)
    if lines is None or "transfer-encoding" in lines.lower():
        return http_response_head(result)  # the reference renames Transfer-Encoding and cleans CR/LF
    reason = f" {_clean(result.reason)}" if result.reason else ""
    text = f"HTTP/{_clean(result.http_version)} {result.status}{reason}\r\n{lines}\r\n"
    return text.encode("utf-8", "surrogateescape")


def _request_block(result: FetchResult) -> bytes:
    lines = _lines(result.request_headers)
    if lines is None:
        return http_request_block(result)
    text = f"GET {_clean(path_of(result.url))} HTTP/{_clean(result.http_version)}\r\n{lines}\r\n"
    return text.encode("utf-8", "surrogateescape")


def _lines(headers: Headers) -> str | None:
    """``Name: value`` CRLF lines of ``headers``; None if a name or value holds a CR or LF."""
    text = "".join([f"{k}: {v}\r\n" for k, v in headers])
    if text.count("\r") != len(headers) or text.count("\n") != len(headers):
        return None
    return text


def _clean(value: str) -> str:
    """A field value with CR and LF turned into spaces, as :func:`.records._field` does."""
    if "\r" in value or "\n" in value:
        return value.translate(_CR_LF)
    return value
