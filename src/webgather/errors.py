"""The one exception tree of webgather.

Every error webgather raises on purpose is a :class:`WebgatherError`. Foreign
exceptions (aiohttp, redis, OSError, protego, warcio) are translated at the one
boundary that talks to that library, so callers never catch a library's types::

    WebgatherError
    ├── ConfigError            bad configuration or command-line value (a user error: one line, no traceback)
    ├── SeedError              unreadable seed file or a seed that is not a URL
    ├── FetchError             one fetch failed; ``kind`` is the short name written to the crawl log
    │   ├── FetchTimeout           "timeout"       connect or total time limit hit
    │   ├── ConnectFailed          "connect"       refused, unreachable
    │   ├── DnsFailed              "dns"           host does not resolve
    │   ├── ConnectionReset        "reset"         peer closed or reset before a response
    │   ├── TruncatedBody          "truncated"     body shorter than its Content-Length or chunking promised
    │   ├── BodyTooLarge           "too_large"     body over max_body_bytes (the kept prefix is truncated)
    │   ├── DecompressionBomb      "bomb"          decoded body over max_decoded_bytes
    │   ├── ProtocolViolation      "protocol"      malformed HTTP from the server
    │   ├── InvalidUrl             "invalid_url"   not an http(s) URL the fetcher can request
    │   ├── RedirectLoop           "redirect_loop" redirect back into its own chain or past max_redirects
    │   ├── ForbiddenAddress       "forbidden_address" resolved to a private address the guard refuses
    │   ├── ProxyUnreachable       "proxy_unreachable" the configured HTTP proxy cannot be reached (refused, timed out, no address)
    │   ├── ProxyAuthFailed        "proxy_auth"    the proxy answered 407: credentials missing or wrong
    │   └── ProxyRefused           "proxy_refused" the proxy answered CONNECT with another non-2xx status (403, 502...)
    ├── StoreError             the archive or crawl state cannot be written or read
    │   ├── CorruptState           persisted state is unreadable (a clear message, never a silent reset)
    │   └── WriteFailed            a write to disk failed (full, quota, I/O error): the crawl stops, what is stored stays whole
    ├── FrontierError          the frontier was used wrongly (e.g. complete() of an item not in flight)
    ├── ClusterError           coordination between nodes failed
    │   ├── BackendUnavailable     the Redis (or other) backend cannot be reached
    │   │   └── BackendBusy            every connection of the client's pool is in use (Redis itself is fine)
    │   ├── Fenced                 a request not sent: the node's lease lapsed and its host's bucket moved
    │   ├── TableConflict          a bucket-table compare-and-swap lost a race
    │   ├── IncompatibleCrawl      a node's settings (M, crawl name, scope) differ from the crawl's
    │   └── CannotContinue         the node cannot go on (backend gone past max_outage_s or its data lost, store unusable): exit 6
    ├── AnalysisError          a crawl directory holds nothing to analyse, or inputs disagree
    └── RenderError            a page could not be rendered in the browser (its links come from the fetched HTML)
        ├── RenderUnavailable      a [render] rule is given but Playwright or the browser is missing
        └── RenderTimeout          the page did not render within render.timeout_s
"""

from __future__ import annotations

import errno

__all__ = [
    "AnalysisError",
    "BackendBusy",
    "BackendUnavailable",
    "BodyTooLarge",
    "CannotContinue",
    "ClusterError",
    "ConfigError",
    "ConnectFailed",
    "ConnectionReset",
    "CorruptState",
    "DecompressionBomb",
    "DnsFailed",
    "FetchError",
    "Fenced",
    "FetchTimeout",
    "ForbiddenAddress",
    "FrontierError",
    "IncompatibleCrawl",
    "InvalidUrl",
    "ProtocolViolation",
    "ProxyAuthFailed",
    "ProxyRefused",
    "ProxyUnreachable",
    "RedirectLoop",
    "RenderError",
    "RenderTimeout",
    "RenderUnavailable",
    "SeedError",
    "StoreError",
    "TableConflict",
    "TruncatedBody",
    "WebgatherError",
    "WriteFailed",
]


class WebgatherError(Exception):
    """Base of every error webgather raises on purpose."""


class ConfigError(WebgatherError):
    """A configuration value, file or command-line option is invalid."""


class SeedError(WebgatherError):
    """A seed cannot be read or is not a crawlable URL."""


class FetchError(WebgatherError):
    """One fetch failed. ``kind`` is the crawl log's short error name."""

    kind = "fetch"


class FetchTimeout(FetchError):
    kind = "timeout"


class ConnectFailed(FetchError):
    kind = "connect"


class DnsFailed(FetchError):
    kind = "dns"


class ConnectionReset(FetchError):
    kind = "reset"


class TruncatedBody(FetchError):
    kind = "truncated"


class BodyTooLarge(FetchError):
    kind = "too_large"


class DecompressionBomb(FetchError):
    kind = "bomb"


class ProtocolViolation(FetchError):
    kind = "protocol"


class InvalidUrl(FetchError):
    kind = "invalid_url"


class RedirectLoop(FetchError):
    kind = "redirect_loop"


class ForbiddenAddress(FetchError):
    """The host resolved to an address the crawl must not connect to (see webgather.fetch.guard)."""

    kind = "forbidden_address"


class ProxyUnreachable(FetchError):
    """No connection to the proxy (its origin was never asked): retried like ``connect``."""

    kind = "proxy_unreachable"


class ProxyAuthFailed(FetchError):
    """The proxy wants (other) credentials: a 407, never archived as the origin's answer; not retried."""

    kind = "proxy_auth"


class ProxyRefused(FetchError):
    """The proxy would not open a CONNECT tunnel (its status in the detail); retried like ``connect``."""

    kind = "proxy_refused"


class StoreError(WebgatherError):
    """The archive or persisted crawl state cannot be written or read."""


class CorruptState(StoreError):
    """Persisted state exists but cannot be read back."""


class WriteFailed(StoreError):
    """A write to disk failed (ENOSPC, EDQUOT, EIO...): the crawl stops; what was stored is kept whole."""

    @classmethod
    def from_os(cls, what: str, exc: OSError) -> WriteFailed:
        """``what`` names the action and path ("cannot write crawl log /x/crawl.log.jsonl");
        a full disk or quota reads "disk full: <what>: <strerror> (ENOSPC)"."""
        name = errno.errorcode.get(exc.errno or 0, "")
        full = "disk full: " if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        return cls(f"{full}{what}: {exc.strerror or exc}" + (f" ({name})" if name else ""))


class FrontierError(WebgatherError):
    """The frontier was asked something impossible (finish an item not in flight, a bad bucket)."""


class ClusterError(WebgatherError):
    """Coordination between crawl nodes failed."""


class BackendUnavailable(ClusterError):
    """The coordination backend (Redis) cannot be reached."""


class BackendBusy(BackendUnavailable):
    """No connection of the client's pool came free in time: the node's own load, not a Redis outage."""


class Fenced(ClusterError):
    """A request was not sent: the node was past its lease and the host's bucket is no longer its own."""


class TableConflict(ClusterError):
    """A compare-and-swap of the bucket table lost against a newer version."""


class IncompatibleCrawl(ClusterError):
    """A node's crawl settings differ from those the crawl was started with."""


class CannotContinue(ClusterError):
    """The node stopped because the crawl cannot go on from here (its backend stayed unreachable past
    ``max_outage_s`` or lost its data; the shared store stayed unusable). Its state is kept; the CLI
    exits with ``ExitCode.CANNOT_CONTINUE`` (6) and this message as its one line."""


class HandoffAbandoned(CannotContinue):
    """A hand-off was not sent because the node is stopping: the shared store stayed unusable past
    ``max_outage_s`` while its WARC files waited to be shipped, or the node closed meanwhile. The
    buckets stay this node's, their state in its output and checkpoints."""


class AnalysisError(WebgatherError):
    """A crawl directory holds nothing to analyse, or its inputs disagree."""


class RenderError(WebgatherError):
    """A page could not be rendered in the browser: its ``kind`` is the crawl-log error kind."""

    kind = "render_error"


class RenderUnavailable(RenderError):
    """A ``[render]`` rule is given but Playwright (the ``render`` extra) or the browser is missing."""

    kind = "render_unavailable"


class RenderTimeout(RenderError):
    """The page did not render within ``render.timeout_s``."""

    kind = "render_timeout"
