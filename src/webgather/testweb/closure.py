"""What a correct, polite crawl of the synthetic web fetches: computed, not crawled. Pure.

:func:`closure` returns the fetched set of docs/contracts.md ("What a crawl
does with each URL", rule 7) for a crawl from ``seeds`` under ``config``;
:func:`crawl_outcomes` also gives the expected crawl-log outcome of every URL
(status, error kind, attempts, redirect, links followed) and of every host's
robots.txt. Both read the model's ground truth (:class:`Response`
``follow_links``, ``location``, faults) with no HTTP and no HTML parser;
robots.txt bodies are read with protego, as RFC 9309 and the contract say.

Order independence: the model keeps every rule a function of the URL alone.
Links never change with time (only text does; dying pages carry no links);
redirect chains and loops are private (their inner URLs are linked from
nowhere), so the redirect count of a URL never depends on which path found
it first; traps are bounded by :class:`~webgather.scope.Scope`, whose rules
look at the URL only; a flaky page fails a fixed number of times. Two things
are *not* order-independent and are therefore refused or documented:

* ``max_pages`` and ``scope.max_pages_per_host`` stop a crawl at a point that
  depends on scheduling: :class:`ConfigError`.
* ``scope.max_depth``: the walk assigns each URL its smallest depth
  (breadth-first over a depth-ordered heap). A crawler that meets a URL first
  on a longer path may give it a larger depth; compare exactly only without
  a depth limit, or with a crawler that keeps strict breadth-first order.

Rendering: links an inline script inserts (``WebParams.script_link_share``) are followed only from
pages the crawl renders in a browser (``config.render``'s rules, :class:`RenderRules`, asked as the
crawler asks them); from other pages only the links in the HTML are.

Time: the answer of a page whose delay is within a few percent of
``fetch.total_timeout_s`` is a race; :func:`crawl_config_for` keeps the web's
delays a factor of four or more away from the timeout.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from protego import Protego

from webgather.config import CrawlConfig
from webgather.errors import ConfigError, SeedError
from webgather.fetch.render_rules import RenderRules
from webgather.frontier.model import requisite_hops, requisite_kind
from webgather.scope import Scope
from webgather.testweb.graph import WebModel
from webgather.testweb.response import CONTENT_MAX_BYTES, Response
from webgather.urls import canonicalize, host_key, hostname

__all__ = ["ClosureResult", "Expected", "ExpectedFetch", "RobotsExpected", "closure", "crawl_outcomes", "expected_fetch"]

REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
NOT_FETCHED = frozenset({"robots", "robots_unavailable", "off_scope"})
MAX_ROBOTS_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class ExpectedFetch:
    status: int | None
    error: str | None
    attempts: int
    """Requests sent for the URL (retries included)."""
    parse: bool
    """The body is parsed (as a page, or as a sitemap for kind "sitemap")."""


@dataclass(frozen=True, slots=True)
class Expected:
    """The final crawl-log entry a correct crawler writes for one URL."""

    url: str
    kind: str
    """"page" or "sitemap"."""
    depth: int
    redirects: int
    status: int | None
    error: str | None
    attempts: int
    redirect: str | None = None
    """Canonical target of a followed redirect."""
    links: tuple[str, ...] = ()
    """Links (or sitemap URLs) extracted from the body; duplicates kept."""
    fault: str | None = None


@dataclass(frozen=True, slots=True)
class RobotsExpected:
    host: str
    """host[:port]."""
    status: int | None
    available: bool
    """False: 5xx/unreachable; the host's URLs end as robots_unavailable."""
    attempts: int
    crawl_delay_s: float | None
    sitemaps: tuple[str, ...]
    drop_error: str | None = None
    """Error the host's URLs end with when unavailable: "robots_unavailable", or "dns"
    for a host outside the web (it does not resolve). A "dns" entry counts as
    fetched under contract rule 7, which excludes only robots/robots_unavailable/off_scope."""


@dataclass(frozen=True)
class ClosureResult:
    fetched: frozenset[str]
    """Contract rule 7: URLs with a final page/sitemap entry not blocked by robots or scope."""
    outcomes: dict[str, Expected]
    """Every URL the crawl decides about (robots-blocked ones included), by URL."""
    robots: dict[str, RobotsExpected]
    """Every host whose robots.txt the crawl reads, by host key."""
    requisites: frozenset[str] = frozenset()
    """Page requisites fetched (``WebParams.requisites`` and ``[scope] requisites``): not in ``fetched``."""


def expected_fetch(response: Response, config: CrawlConfig, kind: str = "page", accept_gzip: bool = True) -> ExpectedFetch:
    """The final outcome of requesting ``response``'s URL under ``config`` (retries applied)."""
    fetch = config.fetch
    tries = fetch.max_retries + 1
    attempts = 1
    if response.fail_attempts:
        if response.fail_attempts >= tries:
            failed = response.fail_status
            return ExpectedFetch(failed, None if failed else "reset", tries, False)
        attempts = response.fail_attempts + 1
    if response.wire in ("reset", "reset_headers"):
        return ExpectedFetch(None, "reset", tries, False)
    if response.delay_s >= fetch.total_timeout_s:
        return ExpectedFetch(None, "timeout", tries, False)
    status = response.status
    if response.wire == "truncate":
        return ExpectedFetch(status, "truncated", tries, False)
    if status >= 500 or status == 429:
        return ExpectedFetch(status, None, tries, False)
    if response.rendered:
        raw, _ = response.wire_body(accept_gzip)
        if len(raw) > fetch.max_body_bytes:
            return ExpectedFetch(status, "too_large", attempts, False)
        if response.payload_bytes > fetch.max_decoded_bytes:
            return ExpectedFetch(status, "bomb", attempts, False)
    parse = 200 <= status < 300 and (kind == "sitemap" or response.content_type in fetch.parse_content_types)
    return ExpectedFetch(status, None, attempts, parse)


class _Robots:
    def __init__(self, expected: RobotsExpected, rules: Protego | None, agent: str) -> None:
        self.expected = expected
        self.rules = rules
        self.agent = agent

    def allowed(self, url: str) -> bool:
        return self.rules is None or bool(self.rules.can_fetch(url, self.agent))


class _Walk:
    """Breadth-first walk over a depth-ordered heap (smallest depth first)."""

    def __init__(self, model: WebModel, config: CrawlConfig, scope: Scope, now_s: float) -> None:
        self.model, self.config, self.scope, self.now_s = model, config, scope, now_s
        self.heap: list[tuple[int, int, str, int, str]] = []
        self.seen: set[str] = set()
        self.outcomes: dict[str, Expected] = {}
        self.robots: dict[str, _Robots] = {}
        self.render = min(config.fetch.max_body_bytes, config.fetch.max_decoded_bytes) < CONTENT_MAX_BYTES
        self.browser = RenderRules.of(config.render)
        """Pages the crawl renders in a browser see their script-inserted links too."""

    def offer(self, url: str, depth: int, redirects: int, kind: str) -> None:
        url = self.scope.clean(url)  # as the crawler's make_items: strip_query_params first
        if url in self.seen:
            return
        requisite = kind.startswith("requisite")
        if (self.scope.reject_requisite(url) if requisite else self.scope.reject(url, depth)) is not None:
            return
        self.seen.add(url)
        heapq.heappush(self.heap, (depth, len(self.seen), url, redirects, kind))

    def run(self) -> None:
        while self.heap:
            depth, _, url, redirects, kind = heapq.heappop(self.heap)
            self.visit(url, depth, redirects, kind)

    def visit(self, url: str, depth: int, redirects: int, kind: str) -> None:
        robots = self.robots_of(host_key(url))
        blocked = robots.expected.drop_error
        if blocked is None and not robots.allowed(url):
            blocked = "robots"
        if blocked is not None:
            self.outcomes[url] = Expected(url, kind, depth, redirects, None, blocked, 0)
            return
        response = self.model.page(url, self.now_s, body=self.render)
        got = expected_fetch(response, self.config, kind)
        error, target = got.error, None
        if error is None and got.status in REDIRECT_STATUS and response.location is not None:
            if response.location == url or redirects + 1 > self.config.fetch.max_redirects:
                error = "redirect_loop"
            else:
                target = response.location
                self.offer(target, depth, redirects + 1, kind)
        links = response.follow_links if got.parse and not kind.startswith("requisite") else ()
        if links and response.script_links and not (kind == "page" and self.browser.matches(url)):
            links = _without(links, response.script_links)
        self.outcomes[url] = Expected(url, kind, depth, redirects, got.status, error, got.attempts,
                                      target, links, response.fault)
        for link in links:
            self.offer(link, depth + 1, 0, "page")
        for requisite in self.requisites_of(response, got, kind):
            self.offer(requisite, depth, 0, requisite_kind(requisite_hops(kind) + 1))

    def requisites_of(self, response: Response, got: ExpectedFetch, kind: str) -> tuple[str, ...]:
        """What the crawl fetches as requisites of ``response`` (pipeline: ``runtime.engine.requisite_items``)."""
        scope = self.config.scope
        if not response.requisites or not scope.requisites or requisite_hops(kind) >= scope.requisite_hops:
            return ()
        if kind.startswith("requisite"):  # only a stylesheet received whole is read
            ok = got.error is None and got.status is not None and 200 <= got.status < 300
            return response.requisites if ok and response.content_type == "text/css" else ()
        return response.requisites if got.parse else ()

    def robots_of(self, key: str) -> _Robots:
        known = self.robots.get(key)
        if known is None:
            known = self.robots[key] = self.fetch_robots(key)
            for sitemap in known.expected.sitemaps:
                self.offer(sitemap, 0, 0, "sitemap")
        return known

    def fetch_robots(self, key: str) -> _Robots:
        agent = self.config.fetch.user_agent
        if not self.config.robots.obey:
            return _Robots(RobotsExpected(key, None, True, 0, None, ()), None, agent)
        if self.model.host_index(hostname("http://" + key + "/")) is None:
            return _Robots(RobotsExpected(key, None, False, 0, None, (), "dns"), None, agent)
        url, attempts = f"http://{key}/robots.txt", 0
        for _ in range(MAX_ROBOTS_REDIRECTS + 1):
            response = self.model.page(url, self.now_s)
            attempts += 1
            status = response.status
            if status in REDIRECT_STATUS and response.location is not None:
                url = response.location
                continue
            if status >= 500 or status == 429:
                expected = RobotsExpected(key, status, False, attempts + self.config.robots.max_tries - 1, None, (),
                                          "robots_unavailable")
                return _Robots(expected, None, agent)
            if 200 <= status < 300:
                return self.parsed(key, status, attempts, response.body, agent)
            return _Robots(RobotsExpected(key, status, True, attempts, None, ()), None, agent)
        return _Robots(RobotsExpected(key, None, True, attempts, None, ()), None, agent)

    def parsed(self, key: str, status: int, attempts: int, body: bytes, agent: str) -> _Robots:
        text = body[: self.config.robots.max_bytes].decode("utf-8", "replace").lstrip("\ufeff")
        rules = Protego.parse(text)
        delay = rules.crawl_delay(agent)
        if delay is not None:
            delay = min(float(delay), self.config.politeness.max_crawl_delay_s)
        sitemaps = tuple(c for c in (canonicalize(s) for s in rules.sitemaps) if c is not None)
        return _Robots(RobotsExpected(key, status, True, attempts, delay, sitemaps), rules, agent)


def _without(links: tuple[str, ...], removed: tuple[str, ...]) -> tuple[str, ...]:
    """``links`` less one occurrence of each of ``removed`` (a URL also linked in the HTML stays)."""
    left = Counter(removed)
    kept = []
    for link in links:
        if left[link] > 0:
            left[link] -= 1
        else:
            kept.append(link)
    return tuple(kept)


def _check(config: CrawlConfig) -> None:
    if config.max_pages is not None or config.scope.max_pages_per_host is not None:
        raise ConfigError("closure: max_pages and scope.max_pages_per_host make the fetched set "
                          "depend on scheduling; unset them to compare with a closure")


def crawl_outcomes(model: WebModel, seeds: Iterable[str], config: CrawlConfig, *,
                   now_s: float | None = None) -> ClosureResult:
    """The expected crawl of ``model`` from ``seeds``: outcomes per URL and per host.

    ``now_s`` (default: the web's epoch) only changes statuses of changing or
    dead pages, never the fetched set.
    """
    _check(config)
    canonical = []
    for seed in seeds:
        url = canonicalize(seed)
        if url is None:
            raise SeedError(f"closure: seed {seed!r} is not an http(s) URL")
        canonical.append(url)
    walk = _Walk(model, config, Scope(config.scope, canonical), model.params.epoch_s if now_s is None else now_s)
    for url in canonical:
        walk.offer(url, 0, 0, "page")
    walk.run()
    done = [(u, e.kind) for u, e in walk.outcomes.items() if e.error not in NOT_FETCHED]
    fetched = frozenset(u for u, kind in done if not kind.startswith("requisite"))
    requisites = frozenset(u for u, kind in done if kind.startswith("requisite"))
    return ClosureResult(fetched, walk.outcomes, {k: r.expected for k, r in walk.robots.items()}, requisites)


def closure(model: WebModel, seeds: Iterable[str], config: CrawlConfig) -> set[str]:
    """The fetched set of a correct crawl of ``model`` from ``seeds`` (contract rule 7)."""
    return set(crawl_outcomes(model, seeds, config).fetched)
