"""What the synthetic web answers at a URL, with its ground truth. Pure.

A :class:`Response` is both the server's recipe (status, headers, body, how
to misbehave on the wire) and the truth a correct crawler must reach from it
(``follow_links``, ``location``, ``fault``). :mod:`webgather.testweb.closure`
reads only the truth; :mod:`webgather.testweb.server` reads only the recipe.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass

__all__ = ["CONTENT_MAX_BYTES", "Response", "gzip_bytes"]

CONTENT_MAX_BYTES = 256 * 1024
"""Upper bound on a content page's body: a crawl whose max_body_bytes is at
least this never cuts a content page, so the closure need not render it."""

Headers = tuple[tuple[str, str], ...]


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip (mtime 0) used for every compressed body."""
    return gzip.compress(data, compresslevel=6, mtime=0)


@dataclass(frozen=True, slots=True)
class Response:
    url: str
    """The canonical URL answered."""
    status: int
    headers: Headers = ()
    """Response headers without Content-Length/Content-Encoding (the server adds those)."""
    body: bytes = b""
    """The payload; for ``content_encoding="gzip"`` already compressed."""
    fault: str | None = None
    """Fixture kind (``"flaky"``, ``"reset"``, ...), ``"dead"`` for a dead page, or None."""
    follow_links: tuple[str, ...] = ()
    """Canonical URLs a correct crawler follows if it receives and parses all of the
    body (for a sitemap document: its ``<loc>`` URLs). Whether it gets there depends
    on the fault and the crawl's limits: :func:`webgather.testweb.closure.expected_fetch`."""
    location: str | None = None
    """Canonical redirect target of a 3xx."""
    delay_s: float = 0.0
    """Seconds the server waits before answering."""
    fail_attempts: int = 0
    """Flaky pages: this many first attempts fail, the next succeeds."""
    fail_status: int | None = None
    """Status of a failing attempt (None: the connection is reset)."""
    wire: str = "normal"
    """"normal", "reset" (before any byte), "reset_headers" (mid header block),
    "truncate" (Content-Length promises more than is sent)."""
    content_encoding: str | None = None
    """Set when the body is sent encoded whatever the client accepts (the bomb)."""
    compressible: bool = False
    """The server gzips the body for clients that accept gzip."""
    decoded_bytes: int = -1
    """Size of the payload after Content-Encoding is removed (-1: len(body))."""
    etag: str | None = None
    last_modified_s: float | None = None
    valid_from_s: float = -math.inf
    valid_until_s: float = math.inf
    """The wall-clock interval in which this answer holds (changing and dying pages)."""
    rendered: bool = True
    """False for a links-only answer (``WebModel.page(..., body=False)``)."""
    requisites: tuple[str, ...] = ()
    """Canonical URLs of what the page (or stylesheet) needs to be shown (``WebParams.requisites``):
    a crawl with requisites fetches them if it parses the body (:mod:`webgather.testweb.requisites`)."""
    script_links: tuple[str, ...] = ()
    """The ``follow_links`` entries that only an inline script inserts into the DOM (``script_link_share``):
    a crawler that does not render the page does not see them."""

    @property
    def content_type(self) -> str:
        """Media type without parameters, lower-case."""
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value.partition(";")[0].strip().lower()
        return ""

    @property
    def payload_bytes(self) -> int:
        """Decoded payload size."""
        return len(self.body) if self.decoded_bytes < 0 else self.decoded_bytes

    def wire_body(self, accept_gzip: bool) -> tuple[bytes, str | None]:
        """(bytes on the wire, Content-Encoding) for a client that does or does not accept gzip."""
        if self.content_encoding is not None:
            return self.body, self.content_encoding
        if self.compressible and accept_gzip:
            return gzip_bytes(self.body), "gzip"
        return self.body, None
