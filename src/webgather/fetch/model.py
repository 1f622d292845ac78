"""What one fetch returns: shared by the HTTP client, the synthetic web, the archive. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["FetchResult", "Headers", "first_header"]

Headers = tuple[tuple[str, str], ...]
"""HTTP header fields in wire order, names as sent."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class FetchResult:
    """The outcome of one HTTP request (no redirects followed: a 3xx is a result).

    Either ``status`` is set (a response arrived, maybe with ``error`` too, e.g. a
    body that was truncated or too large) or ``status`` is None and ``error`` says why.
    """

    url: str
    """The canonical URL requested."""
    started_at: float
    """Wall-clock seconds since the epoch when the request was sent."""
    elapsed_s: float
    status: int | None = None
    reason: str = ""
    http_version: str = "1.1"
    request_headers: Headers = ()
    response_headers: Headers = ()
    raw_body: bytes = b""
    """The body as it came off the wire (still content-encoded): what the WARC stores."""
    body: bytes = b""
    """The decoded payload (Content-Encoding removed), at most max_decoded_bytes."""
    error: str | None = None
    """Short error kind (``FetchError.kind``) or None."""
    error_detail: str = ""
    truncated: bool = False
    """raw_body was cut at max_body_bytes (WARC-Truncated: length)."""
    peer_ip: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        """First response header ``name`` (case-insensitive), or None."""
        return first_header(self.response_headers, name)

    @property
    def content_type(self) -> str:
        """Media type without parameters, lower-case; "" when absent."""
        value = self.header("Content-Type") or ""
        return value.partition(";")[0].strip().lower()


def first_header(headers: Headers, name: str) -> str | None:
    """The first value of header ``name`` (case-insensitive) in ``headers``, or None."""
    lower = name.lower()
    for key, value in headers:
        if key.lower() == lower:
            return value
    return None
