"""robots.txt rules for one user agent (RFC 9309, through protego). Pure.

:meth:`RobotsRules.from_bytes` decodes the body as UTF-8 (invalid bytes become
U+FFFD, a leading byte-order mark is dropped), keeps at most ``max_bytes``
(RFC 9309 asks parsers to read at least 500 KiB; a line cut by that limit is
dropped rather than obeyed half-read) and parses it with protego, which groups
rules by ``User-agent``, merges repeated groups, lets the longest matching
rule win (``Allow`` on a tie) and supports ``*`` and ``$``.

Groups are matched against the *product token* of our User-Agent
(``webgather/0.1 (+https://...)`` -> ``webgather``), case-insensitively;
``User-agent: *`` applies when no group names us. protego also lets a group
whose name is a prefix of our token apply (``User-agent: web`` for
``webgather``), which RFC 9309 (exact match) does not; a more specific group
always wins over it.

Garbage (HTML error pages served as 200, binary) has no valid directives and
so allows everything, as protego (and RFC 9309: no rules, no restrictions)
does. ``/robots.txt`` itself is always allowed.

Which rules an HTTP answer gives (:func:`rules_for_response`, RFC 9309 2.3.1):
2xx -> the parsed body; 3xx left over after the fetch shell followed up to 5
redirects, and 4xx other than 429 -> :data:`ALLOW_ALL`; 429, 5xx and no
response (timeout, unreachable) -> None, "unavailable": disallow for now and
retry (:mod:`webgather.robots.gate` keeps that state).
"""

from __future__ import annotations

import codecs
import re
from urllib.parse import urlsplit

from protego import Protego

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "MAX_ROBOTS_BYTES",
    "RobotsRules",
    "is_allowed",
    "product_token",
    "rules_for_response",
]

MAX_ROBOTS_BYTES = 500 * 1024
"""Bytes of robots.txt parsed by default (RFC 9309: at least 500 KiB)."""

_TOKEN = re.compile(r"[A-Za-z_-]+")


def product_token(user_agent: str) -> str:
    """The name robots.txt groups are matched against: ``webgather/0.1 (+url)`` -> ``webgather``.

    RFC 9309 product tokens are made of ``a-z A-Z _ -``; an agent string with
    none gives "" (only ``User-agent: *`` groups then apply).
    """
    match = _TOKEN.match(user_agent.strip())
    return match.group(0).lower() if match else ""


class RobotsRules:
    """What one host's robots.txt says to one user agent. Read-only after construction."""

    __slots__ = ("_crawl_delay_s", "_default", "_parser", "_sitemaps", "_text", "_token")

    def __init__(self, parser: Protego | None, token: str, default: bool = True, text: str | None = None) -> None:
        """Prefer :meth:`from_bytes`, :data:`ALLOW_ALL` or :data:`DISALLOW_ALL`."""
        self._parser = parser
        self._token = token
        self._default = default
        self._text = text
        self._crawl_delay_s = parser.crawl_delay(token) if parser is not None else None
        self._sitemaps = tuple(parser.sitemaps) if parser is not None else ()

    @property
    def crawl_delay_s(self) -> float | None:
        """``Crawl-delay`` of our group in seconds, or None (clamping is politeness's job)."""
        return self._crawl_delay_s

    @property
    def text(self) -> str | None:
        """The robots.txt text these rules were parsed from (None for ALLOW_ALL and DISALLOW_ALL)."""
        return self._text

    @property
    def token(self) -> str:
        """The product token the groups were matched against."""
        return self._token

    @property
    def default(self) -> bool:
        """Without parsed text: whether everything is allowed (ALLOW_ALL) or nothing (DISALLOW_ALL)."""
        return self._default

    @property
    def sitemaps(self) -> tuple[str, ...]:
        """``Sitemap:`` values as written (any group; resolve and scope-check before use)."""
        return self._sitemaps

    @classmethod
    def from_bytes(
        cls, body: bytes, user_agent: str, max_bytes: int = MAX_ROBOTS_BYTES
    ) -> RobotsRules:
        """Rules for ``user_agent`` (a full User-Agent or a product token) from a robots.txt body."""
        return cls.from_text(_decode(body, max_bytes), user_agent)

    @classmethod
    def from_text(cls, text: str, user_agent: str) -> RobotsRules:
        """As :meth:`from_bytes`, for text already decoded (no size limit applied)."""
        token = product_token(user_agent)
        text = text.lstrip("\ufeff")
        return cls(Protego.parse(text), token, text=text)

    def allowed(self, url: str) -> bool:
        """May ``url`` (absolute, or a path) be fetched? A URL that cannot be split is not."""
        if self._parser is None:
            return self._default or _is_robots_txt(url)
        try:
            return self._parser.can_fetch(url, self._token)
        except ValueError:  # urllib cannot split it (e.g. "http://[bad"): not a fetchable URL
            return False

    def __repr__(self) -> str:
        if self._parser is None:
            return "ALLOW_ALL" if self._default else "DISALLOW_ALL"
        return f"RobotsRules(token={self._token!r}, crawl_delay_s={self.crawl_delay_s!r})"


ALLOW_ALL = RobotsRules(None, "*", default=True)
"""No robots.txt (4xx) or nothing in it for us: everything may be fetched."""
DISALLOW_ALL = RobotsRules(None, "*", default=False)
"""Nothing but ``/robots.txt`` may be fetched."""


def rules_for_response(
    status: int | None, body: bytes, user_agent: str, max_bytes: int = MAX_ROBOTS_BYTES
) -> RobotsRules | None:
    """Rules from the final answer to a robots.txt request (after redirects); None = unavailable.

    ``status`` is None when no response arrived (timeout, reset, unreachable).
    """
    if status is None or status == 429 or status >= 500 or status < 200:
        return None
    if status < 300:
        return RobotsRules.from_bytes(body, user_agent, max_bytes)
    return ALLOW_ALL


def is_allowed(robots_txt: str, user_agent: str, url: str) -> bool:
    """One-shot check: may ``user_agent`` fetch ``url`` under ``robots_txt``? (Parses each call.)"""
    return RobotsRules.from_text(robots_txt, user_agent).allowed(url)


def _decode(body: bytes, max_bytes: int) -> str:
    if len(body) > max_bytes:
        cut = body.rfind(b"\n", 0, max_bytes)
        body = body[: cut + 1] if cut >= 0 else b""
    if body.startswith(codecs.BOM_UTF8):
        body = body[len(codecs.BOM_UTF8) :]
    return body.decode("utf-8", "replace")


def _is_robots_txt(url: str) -> bool:
    try:
        return urlsplit(url).path == "/robots.txt"
    except ValueError:
        return False
