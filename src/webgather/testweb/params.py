"""The knobs of a synthetic web: :class:`WebParams` and :class:`FaultRates`. Pure.

A web is fully described by one frozen :class:`WebParams`; the same params
give the same bytes at every URL, forever. :meth:`WebParams.for_tests` is a
small web holding one of every fixture, and :func:`crawl_config_for` a crawl
configuration whose limits sit on the right side of that web's thresholds
(timeout between slow and very slow, body limits below the oversized page and
the compression bomb), so tests need not repeat those numbers.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from webgather.config import CrawlConfig, FetchConfig, PolitenessConfig, RobotsConfig, ScopeConfig, to_toml
from webgather.errors import ConfigError

LOOPBACK_V4 = "127.0.0.0/8"
"""Where the synthetic web listens (:mod:`webgather.testweb.hosts`)."""

__all__ = [
    "CHARSET_MODES",
    "FIXTURE_KINDS",
    "ROBOTS_KINDS",
    "FaultRates",
    "WebParams",
    "closure_settings",
    "closure_toml",
    "crawl_config_for",
    "load_time_scale",
    "time_scaled",
]

MIB = 1024 * 1024

FIXTURE_KINDS = (
    "not_found", "gone", "server_error", "unavailable", "throttled", "flaky",
    "moved", "found", "chain", "loop", "self_redirect", "long_chain",
    "slow", "very_slow", "reset", "reset_headers", "truncated", "oversized",
    "bomb", "non_html", "calendar", "deep_path", "meta_nofollow", "private", "orphan",
)
"""Fixture page kinds, in the order their counts are stored (see ``faults.py`` for paths)."""

ROBOTS_KINDS = ("allow", "disallow", "agent", "delay", "missing", "error", "garbage", "redirect")
CHARSET_MODES = ("utf8", "cp1252_mislabeled", "meta_only", "bom", "missing")


@dataclass(frozen=True, slots=True)
class FaultRates:
    """Expected fixture pages of each kind per content page of a host.

    A host with n content pages gets ``floor(rate * n + u)`` of a kind (u a
    per-host hashed uniform); any rate > 0 also guarantees at least one on the
    first host, so every enabled kind is reachable from ``h0001``'s home page.
    0 disables a kind. ``bomb`` is a flag: one compression bomb per web.
    """

    not_found: float = 0.002
    gone: float = 0.001
    server_error: float = 0.001
    unavailable: float = 0.001
    """503 with Retry-After."""
    throttled: float = 0.001
    """429 with Retry-After."""
    flaky: float = 0.002
    """Fail the first 1 or 2 attempts (500, 503 or 429), then 200."""
    moved: float = 0.002
    """301 to a content page."""
    found: float = 0.002
    """302 (relative Location), sometimes to another host."""
    chain: float = 0.001
    """Redirect chain of 2..max_chain_hops hops ending on a landing page."""
    loop: float = 0.0005
    """A -> B -> A."""
    self_redirect: float = 0.0005
    long_chain: float = 0.0005
    """Chain of long_chain_hops hops (over the default max_redirects of 5)."""
    slow: float = 0.001
    very_slow: float = 0.0002
    reset: float = 0.0005
    """Connection reset before any response byte."""
    reset_headers: float = 0.0005
    """Connection closed while sending the header block."""
    truncated: float = 0.0005
    """Content-Length larger than the bytes sent, then close."""
    oversized: float = 0.0002
    bomb: bool = True
    non_html: float = 0.003
    """PDF, PNG and JSON documents in turn."""
    calendar: float = 0.0002
    """Endless calendar trap: /cal/k/next/next/..."""
    deep_path: float = 0.0002
    """Ever-deeper path trap whose URL grows by a long distinct segment per level."""
    meta_nofollow: float = 0.001
    private: float = 0.002
    """Pages under /private/ (disallowed by the disallow and agent robots kinds)."""
    orphan: float = 0.002
    """Pages listed only in the sitemap (sitemap hosts only)."""

    def rate(self, kind: str) -> float:
        value = getattr(self, kind)
        return (1.0 if value else 0.0) if isinstance(value, bool) else float(value)

    @classmethod
    def none(cls) -> FaultRates:
        """No fixtures at all: a plain web of content pages."""
        zero = {f.name: 0.0 for f in dataclasses.fields(cls) if f.name != "bomb"}
        return cls(bomb=False, **zero)


@dataclass(frozen=True, slots=True)
class WebParams:
    """Everything that defines a synthetic web. Sizes in bytes, times in seconds."""

    seed: int = 0
    n_hosts: int = 100
    mean_pages_per_host: float = 100.0
    """Content pages per host on average; the total is exactly round(n_hosts x this)."""
    pages_sigma: float = 1.0
    """Log-sd of the lognormal pages-per-host distribution (heavy-tailed)."""
    mean_out_degree: float = 25.0
    """Mean followable links per content page (lognormal, capped at max_out_degree)."""
    out_degree_sigma: float = 0.7
    max_out_degree: int = 500
    cross_host_share: float = 0.15
    """Share of links whose target host is drawn from all hosts (by size)."""
    in_degree_exponent: float = 1.86
    """gamma of P(in-degree = k) ~ k^-gamma (1.86: the exponent the WebGather crawl measured;
    Broder et al. report 2.1); targets are drawn by rank^-(1/(gamma-1)), see links.py."""
    hosts_per_ip: int = 4
    port: int = 80
    """Port used where no URL says one (link_graph URLs, robots(host) without a port)."""
    domain: str = "web.test"
    mean_page_bytes: int = 12_900
    page_bytes_sigma: float = 0.5
    base_href_share: float = 0.05
    nofollow_share: float = 0.1
    """Content pages carrying a rel=nofollow link to their /nf/ page."""
    gzip_share: float = 0.2
    """Content pages served gzip-encoded when the client accepts it."""
    charset_mix: tuple[tuple[str, float], ...] = (
        ("utf8", 0.8), ("cp1252_mislabeled", 0.05), ("meta_only", 0.07), ("bom", 0.04), ("missing", 0.04),
    )
    change_mix: tuple[tuple[float | None, float], ...] = (
        (None, 0.5), (30 * 86400.0, 0.35), (86400.0, 0.1), (3600.0, 0.05),
    )
    """(change period in seconds or None for never, share of content pages)."""
    dying_share: float = 0.01
    """Content pages (without out-links) that answer 404 or 410 after a known time."""
    epoch_s: float = 1_700_000_000.0
    """Wall-clock time the web is born: versions count from here."""
    death_horizon_s: float = 90 * 86400.0
    robots_mix: tuple[tuple[str, float], ...] = (
        ("allow", 0.55), ("disallow", 0.15), ("agent", 0.05), ("delay", 0.1),
        ("missing", 0.08), ("error", 0.02), ("garbage", 0.03), ("redirect", 0.02),
    )
    sitemap_share: float = 0.3
    robots_agent: str = "webgather"
    """Product token of the robots.txt group written for the crawler (agent kind)."""
    crawl_delay_s: float = 1.0
    retry_after_s: int = 1
    slow_s: float = 0.5
    very_slow_s: float = 40.0
    oversize_bytes: int = 11 * MIB
    bomb_decoded_bytes: int = 64 * MIB
    max_chain_hops: int = 4
    long_chain_hops: int = 7
    trap_segment_chars: int = 40
    faults: FaultRates = field(default_factory=FaultRates)
    requisites: bool = False
    """Content pages link a stylesheet (which imports another) and show an image, each stylesheet has a
    background image (:mod:`webgather.testweb.requisites`). Off: the pages have none (closures unchanged)."""
    script_link_share: float = 0.0
    """Content pages whose ``<a href>`` links are inserted by an inline script (their other links stay
    in the HTML): only a crawl that renders them (``[render]``) finds those links. 0: none."""

    def __post_init__(self) -> None:
        for message in _problems(self):
            raise ConfigError(f"testweb: {message}")

    @property
    def n_pages(self) -> int:
        """Content pages in the whole web."""
        return max(self.n_hosts, round(self.n_hosts * self.mean_pages_per_host))

    @classmethod
    def for_tests(cls, seed: int = 1, **overrides: object) -> WebParams:
        """A small web (10 hosts, ~12 pages each) with one of every fixture on h0001
        and every robots kind on some host; thresholds sized for :func:`crawl_config_for`."""
        shares = tuple((kind, 1.0) for kind in ROBOTS_KINDS)
        values: dict[str, object] = dict(
            seed=seed, n_hosts=10, mean_pages_per_host=12.0, pages_sigma=0.5, hosts_per_ip=3,
            mean_page_bytes=4000, robots_mix=shares, sitemap_share=0.5, crawl_delay_s=0.05,
            retry_after_s=0, slow_s=0.05, very_slow_s=1.0, oversize_bytes=2 * MIB,
            bomb_decoded_bytes=8 * MIB, dying_share=0.05, base_href_share=0.15,
            nofollow_share=0.2, gzip_share=0.3,
            charset_mix=tuple((mode, 1.0) for mode in CHARSET_MODES),
        )
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


def _problems(p: WebParams) -> list[str]:
    checks = [
        (p.n_hosts >= 1, "n_hosts must be >= 1"),
        (p.mean_pages_per_host >= 1, "mean_pages_per_host must be >= 1"),
        (p.pages_sigma >= 0 and p.out_degree_sigma >= 0 and p.page_bytes_sigma >= 0, "sigmas must be >= 0"),
        (p.mean_out_degree >= 1 and p.max_out_degree >= p.mean_out_degree, "need 1 <= mean_out_degree <= max_out_degree"),
        (p.in_degree_exponent > 1.05, "in_degree_exponent must be > 1.05"),
        (p.hosts_per_ip >= 1, "hosts_per_ip must be >= 1"),
        (0 < p.port < 65536, "port must be in 1..65535"),
        (p.mean_page_bytes >= 500, "mean_page_bytes must be >= 500"),
        (p.retry_after_s >= 0 and p.crawl_delay_s >= 0, "retry_after_s and crawl_delay_s must be >= 0"),
        (0 <= p.slow_s < p.very_slow_s, "need 0 <= slow_s < very_slow_s"),
        (p.oversize_bytes > 0 and p.bomb_decoded_bytes > 0, "sizes must be > 0"),
        (2 <= p.max_chain_hops and p.long_chain_hops >= 1, "need max_chain_hops >= 2 and long_chain_hops >= 1"),
        (p.trap_segment_chars >= 8, "trap_segment_chars must be >= 8"),
        (p.death_horizon_s > 0, "death_horizon_s must be > 0"),
        (math.isfinite(p.epoch_s), "epoch_s must be finite"),
        (all(ch.isalnum() or ch in ".-" for ch in p.domain) and bool(p.domain), "domain must be a DNS name"),
    ]
    problems = [message for ok, message in checks if not ok]
    for name in ("cross_host_share", "base_href_share", "nofollow_share", "gzip_share", "dying_share", "sitemap_share",
                 "script_link_share"):
        if not 0.0 <= getattr(p, name) <= 1.0:
            problems.append(f"{name} must be in [0, 1]")
    problems += _mix_problems("robots_mix", p.robots_mix, ROBOTS_KINDS)
    problems += _mix_problems("charset_mix", p.charset_mix, CHARSET_MODES)
    if any(share < 0 for _, share in p.change_mix) or sum(s for _, s in p.change_mix) <= 0:
        problems.append("change_mix shares must be >= 0 with a positive sum")
    if any(period is not None and period <= 0 for period, _ in p.change_mix):
        problems.append("change_mix periods must be > 0 (or None for never)")
    if any(p.faults.rate(kind) < 0 for kind in FIXTURE_KINDS):
        problems.append("fault rates must be >= 0")
    return problems


def _mix_problems(name: str, mix: tuple[tuple[str, float], ...], known: tuple[str, ...]) -> list[str]:
    unknown = [kind for kind, _ in mix if kind not in known]
    if unknown:
        return [f"{name}: unknown kind(s) {', '.join(unknown)}; known: {', '.join(known)}"]
    if any(share < 0 for _, share in mix) or sum(share for _, share in mix) <= 0:
        return [f"{name}: shares must be >= 0 with a positive sum"]
    return []


def crawl_config_for(params: WebParams, seeds: tuple[str, ...] = (), **sections: object) -> CrawlConfig:
    """A crawl config fit for ``params``: scope = the web's domain, no politeness
    delay of our own, timeout between ``slow_s`` and ``very_slow_s``, body limits
    below ``oversize_bytes`` and ``bomb_decoded_bytes``, tiny robots retry wait.

    ``sections`` replaces whole sections (``fetch=FetchConfig(...)``).
    """
    timeout_s = math.sqrt(max(params.slow_s, 1e-3) * params.very_slow_s)
    fetch = FetchConfig(
        connect_timeout_s=max(timeout_s, 1.0), total_timeout_s=timeout_s,
        max_body_bytes=max(1024, params.oversize_bytes // 2),
        max_decoded_bytes=max(2048, params.bomb_decoded_bytes // 2),
        max_redirects=5, max_retries=2,
        allow_addresses=(LOOPBACK_V4,),  # the web's own addresses (testweb.hosts): past the private-address guard
    )
    values: dict[str, object] = dict(
        seeds=seeds, progress=False,
        politeness=PolitenessConfig(min_delay_s=0.0, backoff_base_s=0.01, backoff_max_s=0.1,
                                    max_crawl_delay_s=max(1.0, params.crawl_delay_s)),
        fetch=fetch,
        scope=ScopeConfig(mode="domains", domains=(params.domain,), max_url_length=300),
        robots=RobotsConfig(error_retry_s=0.01, retry_factor=1.0, max_tries=3),
    )
    values.update(sections)
    return CrawlConfig(**values)  # type: ignore[arg-type]


def time_scaled(params: WebParams, scale: float) -> WebParams:
    """``params`` with the web's delays (``slow_s``, ``very_slow_s``) times ``scale``: the crawl's timeout of
    :func:`crawl_config_for` (their geometric mean) scales with them, so every page keeps its side of it."""
    if not (math.isfinite(scale) and scale >= 1.0):
        raise ConfigError(f"testweb: the time scale must be a number >= 1, not {scale}")
    return dataclasses.replace(params, slow_s=params.slow_s * scale, very_slow_s=params.very_slow_s * scale)


def load_time_scale(load: float, cores: int) -> float:
    """How much slower than on a quiet machine a page may come on one with ``load`` runnable processes
    (1-minute load average) over ``cores``: the load per core, at least 1, rounded up to a half."""
    per_core = load / max(1, cores)
    return max(1.0, math.ceil(2 * per_core) / 2) if math.isfinite(per_core) else 1.0


CLOSURE_SECTIONS = ("politeness", "fetch", "scope", "robots")
"""The config sections :func:`crawl_config_for` sets: the closure holds for a crawl under these."""


def closure_toml(params: WebParams) -> str:
    """The settings under which the web's closure holds, as a ``--config`` file (``testweb serve`` writes it)."""
    blocks = to_toml(crawl_config_for(params)).split("\n[")
    kept = ["[" + block.rstrip("\n") + "\n" for block in blocks[1:] if block.split("]", 1)[0] in CLOSURE_SECTIONS]
    return ("# The settings under which the synthetic web's closure holds (webgather testweb stats):\n"
            "# webgather crawl @seeds.txt --resolve resolve.txt --config crawl.toml\n" + "\n".join(kept))


def closure_settings(params: WebParams) -> str:
    """The same settings in one line, for ``testweb stats``."""
    c = crawl_config_for(params)
    return (f"crawl from closure_from with scope domains {','.join(c.scope.domains)} (every host of the web), "
            f"{','.join(c.fetch.allow_addresses)} allowed, timeout {c.fetch.total_timeout_s:.2f} s, "
            f"{c.fetch.max_retries} retries, no delay of its own, Crawl-delay capped at {c.politeness.max_crawl_delay_s:g} s, "
            f"robots.txt errors tried {c.robots.max_tries} times {c.robots.error_retry_s:g} s apart, "
            f"max URL length {c.scope.max_url_length}: the crawl.toml testweb serve writes")
