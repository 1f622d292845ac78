"""Which discovered URLs a crawl follows, and the query arguments they lose. Pure.

The crawler and the synthetic web's ``closure`` both ask :meth:`Scope.reject`,
so "in scope" means one thing. Trap guards are properties of the URL alone
(length, repeated path segments), never of discovery order, so a crawl's
fetched set is deterministic whatever the concurrency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from webgather.config import ScopeConfig
from webgather.scope_rules import UrlRules
from webgather.urls import canonicalize, host_key, hostname, path_of

__all__ = ["Scope", "site_key"]


class Scope:
    """Scope rules of one crawl: host mode, depth, URL length, include/exclude rules and trap guard."""

    def __init__(self, config: ScopeConfig, seed_urls: Iterable[str] = ()) -> None:
        self.config = config
        self.seed_hosts = frozenset(site_key(u) for u in seed_urls)
        """``host[:port]`` of each seed (see :func:`site_key`): what mode "seed-hosts" admits."""
        self._domains = tuple(_domain_key(d) for d in config.domains)
        self.rules = UrlRules.of(config.include, config.exclude, config.include_surt, config.exclude_surt,
                                 config.strip_query_params)
        self.clean = self.rules.clean
        """Canonical URL -> the URL the crawl fetches and fingerprints (``strip_query_params`` applied)."""
        self._filters = self.rules.filters

    def add_seed_hosts(self, seed_urls: Iterable[str]) -> None:
        self.seed_hosts = self.seed_hosts | {site_key(u) for u in seed_urls}

    def reject(self, url: str, depth: int) -> str | None:
        """Why ``url`` (canonical) at ``depth`` is out of scope, or ``None`` if it is in."""
        config = self.config
        if len(url) > config.max_url_length:
            return "url_too_long"
        if config.max_depth is not None and depth > config.max_depth:
            return "too_deep"
        if not self.url_allowed(url):
            return "off_scope"
        if self._filters and self.rules.excluded(url):
            return "excluded"
        if _repeats_segment(path_of(url), config.max_repeated_segments):
            return "trap"
        return None

    def reject_requisite(self, url: str) -> str | None:
        """:meth:`reject` for a page requisite: no depth, the host mode only without ``requisites_any_host``, and
        exclude rules but not include rules (those choose pages: ``--include /tutorial/`` keeps ``/_static/``'s
        stylesheets, as a CDN's are kept)."""
        config = self.config
        if len(url) > config.max_url_length:
            return "url_too_long"
        if not config.requisites_any_host and not self.url_allowed(url):
            return "off_scope"
        if self._filters and self.rules.excluded(url, includes=False):
            return "excluded"
        if _repeats_segment(path_of(url), config.max_repeated_segments):
            return "trap"
        return None

    def url_allowed(self, url: str) -> bool:
        """The host mode's verdict on canonical ``url``: seed hosts key on host and port, domains on the host."""
        mode = self.config.mode
        if mode == "any":
            return True
        if mode == "seed-hosts":
            return site_key(url) in self.seed_hosts
        host = hostname(url)
        return any(host == d or host.endswith("." + d) for d in self._domains)


def site_key(url: str) -> str:
    """``host[:port]`` of a canonical URL, the port left out when it is 80 or 443.

    A seed on ``intranet:8080`` must not admit ``intranet:6379`` (another service
    altogether), so the port counts. The two web ports count as one: canonical
    URLs already drop a scheme's default port, and a site that moves from http
    to https (a redirect most sites make) stays the same site.
    """
    key = host_key(url)
    host = hostname(url)
    port = key[len(host) + 1 :]
    return host if port in ("", "80", "443") else key


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
