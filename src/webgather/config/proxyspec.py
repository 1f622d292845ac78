"""An HTTP proxy as the configuration names it, and a per-host rule's pattern. Pure.

Here, below :mod:`webgather.fetch`, so that :func:`webgather.config.load` refuses
a bad ``[fetch] proxy`` or ``proxy_rules`` entry with a one-line error before a
crawl starts (a cluster crawl stores its settings for every node). The choice
of a proxy per URL, and the environment's ``HTTP_PROXY`` family, are
:mod:`webgather.fetch.proxy`'s.

Only ``http://`` proxies: the crawler speaks plain HTTP/1.1 to the proxy
(absolute-form requests for http URLs, ``CONNECT`` tunnels with TLS to the
origin for https ones). A scheme-less ``host:port`` (as environment variables
often hold) means ``http://``. Credentials in the URL (percent-encoded) become
a Basic ``Proxy-Authorization`` (RFC 9110 11.7.1, RFC 7617 with UTF-8).
"""

from __future__ import annotations

import base64
import fnmatch
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from webgather.errors import ConfigError

__all__ = ["DIRECT", "Proxy", "host_glob", "parse_proxy"]

DIRECT = "direct"
"""The word that means "no proxy" where a proxy URL is expected."""
_HOST_GLOB = re.compile(r"[A-Za-z0-9.*?\[\]!:_-]+\Z")


@dataclass(frozen=True, slots=True)
class Proxy:
    """One HTTP proxy: where it is and how to authenticate to it."""

    host: str
    """Lower-case; an IPv6 literal without brackets."""
    port: int
    user: str = field(default="", repr=False)
    password: str = field(default="", repr=False)

    @property
    def shown(self) -> str:
        """``http://host:port``: the proxy in logs and crawl-log details (never its credentials)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def authorization(self) -> str | None:
        """The ``Proxy-Authorization`` value, or None without credentials."""
        if not self.user and not self.password:
            return None
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode("ascii")
        return f"Basic {token}"


def parse_proxy(text: str, where: str) -> Proxy | None:
    """``text`` as a proxy (None for ``"direct"``); :class:`ConfigError` naming ``where`` otherwise."""
    value = text.strip()
    if value.lower() == DIRECT:
        return None
    if "://" not in value:
        value = "http://" + value
    try:
        parts = urlsplit(value)
        host, port = parts.hostname or "", parts.port
    except ValueError as exc:
        raise ConfigError(f"{where}: {_redact(text)!r} is not a proxy URL ({exc})") from None
    if parts.scheme.lower() != "http":
        raise ConfigError(f"{where}: {parts.scheme}:// proxies are not supported (only http://host:port, "
                          "which tunnels https URLs with CONNECT)")
    if not host or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(f"{where}: {_redact(text)!r} is not a proxy URL (expected http://[user:password@]host:port)")
    return Proxy(host.lower(), port or 80, unquote(parts.username or ""), unquote(parts.password or ""))


def host_glob(pattern: str, where: str) -> re.Pattern[str]:
    """A proxy rule's host glob (``*.example.com``, ``10.0.*``) as a case-insensitive regex of the whole host."""
    glob = pattern.strip().lower()
    if not glob or not _HOST_GLOB.match(glob):
        raise ConfigError(f"{where}: {pattern!r} is not a host glob (e.g. *.example.com, intranet.test, 10.0.*)")
    return re.compile(fnmatch.translate(glob))


def _redact(text: str) -> str:
    """``text`` without the password an error message must not repeat."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    at = rest.rfind("@")
    if at < 0:
        return text
    return f"{scheme}{sep}***@{rest[at + 1:]}"
