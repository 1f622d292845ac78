"""Key names of the Redis backend, and URLs fit for messages. Pure.

The table of keys and what they hold is in :mod:`webgather.cluster.redis`.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from webgather.cluster import _common as common

__all__ = ["Keys", "redact_url"]


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and logs)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "<unparsable URL>"


class Keys:
    """The names of one crawl's keys (``redis`` module docstring)."""

    def __init__(self, crawl: str) -> None:
        self.prefix = f"wg:{{{common.check_crawl_name(crawl)}}}:"
        self.ready = self.prefix + "ready"
        self.bell = self.prefix + "bell"
        self.table = self.prefix + "table"
        self.settings = self.prefix + "settings"
        self.definition = self.prefix + "definition"
        self.members = self.prefix + "members"
        self.member_prefix = self.prefix + "m:"
        self.lease = self.prefix + "lease"
        self.counters = self.prefix + "counters"
        self.addresses = self.prefix + "addresses"

    def stream(self, bucket: int) -> str:
        return f"{self.prefix}b:{bucket}"
