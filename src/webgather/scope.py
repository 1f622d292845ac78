"""Which discovered URLs a crawl follows. Pure.

The crawler and the synthetic web's ``closure`` both ask :meth:`Scope.reject`,
so "in scope" means one thing. Trap guards are properties of the URL alone
(length, repeated path segments), never of discovery order, so a crawl's
fetched set is deterministic whatever the concurrency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from webgather.config import ScopeConfig
from webgather.urls import canonicalize, hostname, path_of

__all__ = ["Scope"]


class Scope:
    """Scope rules of one crawl: host mode, depth, URL length and trap guard."""

    def __init__(self, config: ScopeConfig, seed_urls: Iterable[str] = ()) -> None:
        self.config = config
        self.seed_hosts = frozenset(hostname(u) for u in seed_urls)
        self._domains = tuple(_domain_key(d) for d in config.domains)

    def add_seed_hosts(self, seed_urls: Iterable[str]) -> None:
        self.seed_hosts = self.seed_hosts | {hostname(u) for u in seed_urls}

    def reject(self, url: str, depth: int) -> str | None:
        """Why ``url`` (canonical) at ``depth`` is out of scope, or ``None`` if it is in."""
        config = self.config
        if len(url) > config.max_url_length:
            return "url_too_long"
        if config.max_depth is not None and depth > config.max_depth:
            return "too_deep"
        if not self.host_allowed(hostname(url)):
            return "off_scope"
        if _repeats_segment(path_of(url), config.max_repeated_segments):
            return "trap"
        return None

    def host_allowed(self, host: str) -> bool:
        mode = self.config.mode
        if mode == "any":
            return True
        if mode == "seed-hosts":
            return host in self.seed_hosts
        return any(host == d or host.endswith("." + d) for d in self._domains)


def _domain_key(domain: str) -> str:
    """A configured domain as canonical URLs spell hosts: lower case, IDNA ("bücher.de" -> "xn--...")."""
    bare = domain.strip().strip(".").lower()
    canonical = canonicalize(f"http://{bare}/")
    return hostname(canonical) if canonical is not None else bare


def _repeats_segment(path: str, max_repeats: int) -> bool:
    path = path.partition("?")[0]
    if path.count("/") <= max_repeats:
        return False
    counts = Counter(segment for segment in path.split("/") if segment)
    return bool(counts) and max(counts.values()) > max_repeats
