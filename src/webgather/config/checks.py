"""Validation of a loaded configuration: one list of (holds, message)."""

from __future__ import annotations

import ipaddress

from webgather.config.listen import listen_address
from webgather.config.proxyspec import host_glob, parse_proxy
from webgather.config.sections import CrawlConfig, FetchConfig
from webgather.errors import ConfigError
from webgather.scope_rules import UrlRules

__all__ = ["validate"]


def validate(config: CrawlConfig, allowed_cpus: int | None = None) -> None:
    """:class:`ConfigError` naming the first setting out of range.

    ``allowed_cpus``: how many CPUs this process may run on (None: unknown), for ``pin_cpu``."""
    for ok, message in [*_crawl_checks(config), *_fetch_checks(config), *_cluster_checks(config),
                        *_range_checks(config), _pin_cpu_check(config.pin_cpu, allowed_cpus),
                        _scope_rules_check(config), *_render_checks(config)]:
        if not ok:
            raise ConfigError(message)


def _crawl_checks(config: CrawlConfig) -> list[tuple[bool, str]]:
    """Politeness, scope, robots, parse and the top-level settings."""
    return [
        (config.politeness.min_delay_s >= 0, "politeness.min_delay_s must be >= 0"),
        (config.politeness.per_host_connections >= 1, "politeness.per_host_connections must be >= 1"),
        (config.politeness.per_ip_connections >= 1, "politeness.per_ip_connections must be >= 1"),
        (config.max_pages is None or config.max_pages >= 1, "max_pages must be >= 1"),
        (config.pin_cpu in ("auto", "off") or config.pin_cpu.isdigit(), 'pin_cpu must be "auto", "off" or a CPU index'),
        (config.scope.max_depth is None or config.scope.max_depth >= 0, "scope.max_depth must be >= 0"),
        (1 <= config.scope.requisite_hops <= 5, "scope.requisite_hops must be 1 to 5"),
        (config.scope.mode != "domains" or bool(config.scope.domains), 'scope.mode "domains" needs scope.domains'),
        (config.robots.ttl_s > 0 and config.robots.error_retry_s >= 0, "robots.ttl_s must be > 0, error_retry_s >= 0"),
        (config.robots.retry_factor >= 1, "robots.retry_factor must be >= 1"),
        (config.robots.max_tries >= 1 and config.robots.max_hosts >= 1, "robots.max_tries and max_hosts must be >= 1"),
        (config.robots.unreachable_tries >= 1 and config.robots.unreachable_retry_s >= 0,
         "robots.unreachable_tries must be >= 1, unreachable_retry_s >= 0"),
        (config.parse.max_seconds > 0, "parse.max_seconds must be > 0"),
        (config.parse.workers >= 1, "parse.workers must be >= 1"),
        (config.parse.inline_max_tags >= 0 and config.parse.inline_max_bytes >= 0, "parse.inline_max_tags and inline_max_bytes must be >= 0"),
        (config.parse.max_bytes > 0 and config.parse.max_tags > 0, "parse.max_bytes and max_tags must be > 0"),
        (config.parse.max_memory >= 128 * 1024 * 1024, "parse.max_memory must be >= 128 MiB (134217728)"),
        (config.parse.inline_max_bytes <= config.parse.max_bytes and config.parse.inline_max_tags <= config.parse.max_tags,
         "parse.inline_max_bytes and inline_max_tags must be <= parse.max_bytes and max_tags"),
        (config.metrics is None or listen_address(config.metrics) is not None,
         f"metrics must be PORT or ADDR:PORT with an IP address ([::1]:9100 for IPv6) and a port "
         f"in 0..65535, not {config.metrics!r}"),
        (config.hooks.module is None or all(part.isidentifier() for part in config.hooks.module.split(".")),
         f"hooks.module must be a module's import path (pkg.mod), not {config.hooks.module!r}"),
    ]


def _fetch_checks(config: CrawlConfig) -> list[tuple[bool, str]]:
    """``[fetch]``."""
    proxy_problem = _proxy_problem(config.fetch)
    return [
        (config.fetch.concurrency >= 1, "fetch.concurrency must be at least 1"),
        (config.fetch.max_body_bytes > 0, "fetch.max_body_bytes must be > 0"),
        (config.fetch.max_redirects >= 0, "fetch.max_redirects must be >= 0"),
        (config.fetch.max_idle_connections >= 0, "fetch.max_idle_connections must be >= 0"),
        (config.fetch.max_cookies_per_host >= 1, "fetch.max_cookies_per_host must be >= 1"),
        (config.fetch.max_cookie_bytes_per_host >= 1, "fetch.max_cookie_bytes_per_host must be >= 1"),
        (config.fetch.connect_timeout_s > 0 and config.fetch.total_timeout_s > 0, "timeouts must be > 0"),
        (_networks_ok(config.fetch.allow_addresses), "fetch.allow_addresses: each must be an address or CIDR network"),
        (_is_ip(config.fetch.source_address), "fetch.source_address must be an IP address literal"),
        (not proxy_problem, proxy_problem),
    ]


def _cluster_checks(config: CrawlConfig) -> list[tuple[bool, str]]:
    """``[cluster]``."""
    return [
        (1 <= config.cluster.n_buckets <= 4096, "cluster.n_buckets must be in 1..4096"),
        (config.cluster.batch_urls >= 1 and config.cluster.batch_wait_s >= 0, "cluster.batch_urls must be >= 1, batch_wait_s >= 0"),
        (config.cluster.sent_cache_entries >= 0, "cluster.sent_cache_entries must be >= 0"),
        (0 < config.cluster.heartbeat_s < config.cluster.member_ttl_s, "need 0 < cluster.heartbeat_s < cluster.member_ttl_s"),
        (config.cluster.interval_s > 0, "cluster.interval_s must be > 0"),
        (config.cluster.max_outage_s > 0, "cluster.max_outage_s must be > 0"),
        (0 <= config.cluster.lease_margin_s and config.cluster.lease_margin_s + 2 * config.cluster.heartbeat_s
         < config.cluster.member_ttl_s, "need 0 <= cluster.lease_margin_s < member_ttl_s - 2 * heartbeat_s"),
        (config.cluster.shared_store is None or config.cluster.shared_store.startswith(("file:///", "s3://")),
         "cluster.shared_store must be file:///path or s3://bucket/prefix"),
        (config.cluster.checkpoint_s > 0 and (config.cluster.shared_store is None
                                              or config.cluster.checkpoint_s < config.cluster.claim_idle_s),
         "need 0 < cluster.checkpoint_s, and below cluster.claim_idle_s with a shared store"),
        (config.cluster.partition_by != "gnp" or len(config.cluster.gnp_landmarks) >= 2,
         'cluster.partition_by "gnp" needs at least 2 cluster.gnp_landmarks (URLs every node httppings)'),
        (min(config.cluster.gnp_k, config.cluster.gnp_dims, config.cluster.gnp_samples) >= 1,
         "cluster.gnp_k, gnp_dims and gnp_samples must be >= 1"),
        (config.cluster.gnp_modulus_ms > 0 and config.cluster.gnp_wait_s > 0, "cluster.gnp_modulus_ms and gnp_wait_s must be > 0"),
    ]


def _range_checks(config: CrawlConfig) -> list[tuple[bool, str]]:
    """Counts, sizes and durations the other lists leave open: a nonsense value fails here, not mid-crawl."""
    p, f, s, fr, r = config.politeness, config.fetch, config.scope, config.frontier, config.recrawl
    return [
        (min(p.adaptive_delay_factor, p.max_delay_s, p.max_crawl_delay_s) >= 0,
         "politeness.adaptive_delay_factor, max_delay_s and max_crawl_delay_s must be >= 0"),
        (min(p.backoff_base_s, p.backoff_max_s, p.retry_after_max_s) >= 0,
         "politeness.backoff_base_s, backoff_max_s and retry_after_max_s must be >= 0"),
        (f.max_decoded_bytes > 0, "fetch.max_decoded_bytes must be > 0"),
        (f.max_retries >= 0 and f.dns_ttl_s >= 0, "fetch.max_retries and dns_ttl_s must be >= 0"),
        (s.max_pages_per_host is None or s.max_pages_per_host >= 1, "scope.max_pages_per_host must be >= 1"),
        (s.max_url_length >= 1 and s.max_repeated_segments >= 1, "scope.max_url_length and max_repeated_segments must be >= 1"),
        (config.robots.max_bytes > 0, "robots.max_bytes must be > 0"),
        (min(fr.seen_memory_entries, fr.host_queue_memory, fr.queue_memory_items) >= 1 and fr.seen_cache_entries >= 0,
         "frontier.seen_memory_entries, host_queue_memory and queue_memory_items must be >= 1, seen_cache_entries >= 0"),
        (config.store.warc_max_bytes > 0, "store.warc_max_bytes must be > 0"),
        (config.cluster.claim_idle_s > 0 and config.cluster.handoff_timeout_s > 0,
         "cluster.claim_idle_s and handoff_timeout_s must be > 0"),
        (r.cycle_s > 0 and r.max_interval_s > 0 and r.page_life_s > 0,
         "recrawl.cycle_s, max_interval_s and page_life_s must be > 0"),
        (r.budget_per_cycle is None or r.budget_per_cycle >= 1, "recrawl.budget_per_cycle must be >= 1"),
        (0 <= r.new_url_share <= 1, "recrawl.new_url_share must be in 0..1"),
        (r.dead_after_failures >= 1 and r.history_max >= 1, "recrawl.dead_after_failures and history_max must be >= 1"),
        (0 <= r.near_dup_max_bits <= 64 and r.prior_weight >= 0,
         "recrawl.near_dup_max_bits must be in 0..64, prior_weight >= 0"),
        (config.hooks.items is None or config.hooks.items.endswith((".jsonl", ".parquet")),
         f"hooks.items must be a path ending in .jsonl or .parquet (the format), not {config.hooks.items!r}"),
        (config.hooks.items_batch >= 1 and config.hooks.items_flush_s > 0,
         "hooks.items_batch must be >= 1 and items_flush_s > 0"),
    ]


def _pin_cpu_check(pin_cpu: str, allowed_cpus: int | None) -> tuple[bool, str]:
    """A CPU index past the CPUs this process may use is a typo or another machine's setting, not a wish."""
    if allowed_cpus is None or not pin_cpu.isdigit() or int(pin_cpu) < allowed_cpus:
        return True, ""
    return False, (f"pin_cpu {pin_cpu}: this process may run on {allowed_cpus} CPU(s), "
                   f"so give 0..{allowed_cpus - 1}, \"auto\" or \"off\"")


def _networks_ok(cidrs: tuple[str, ...]) -> bool:
    try:
        for cidr in cidrs:
            ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return False
    return True


def _proxy_problem(fetch: FetchConfig) -> str:
    """What is wrong with ``fetch.proxy`` or a ``fetch.proxy_rules`` entry, or ""."""
    try:
        if fetch.proxy is not None:
            parse_proxy(fetch.proxy, "fetch.proxy")
        for number, rule in enumerate(fetch.proxy_rules, start=1):
            host_glob(rule.pattern, f"fetch.proxy_rules[{number}].pattern")
            parse_proxy(rule.proxy, f"fetch.proxy_rules[{number}].proxy")
    except ConfigError as exc:
        return str(exc)
    return ""


def _is_ip(value: str | None) -> bool:
    """None (no binding) or an IPv4/IPv6 literal: a name would need DNS at every connect."""
    if value is None:
        return True
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _scope_rules_check(config: CrawlConfig) -> tuple[bool, str]:
    """A bad regex or SURT prefix of ``[scope]``: one line naming the setting, before the crawl starts."""
    s = config.scope
    try:
        UrlRules.of(s.include, s.exclude, s.include_surt, s.exclude_surt, s.strip_query_params)
    except ConfigError as exc:
        return False, str(exc)
    return True, ""


def _render_checks(config: CrawlConfig) -> list[tuple[bool, str]]:
    """``[render]``: its ranges, and a bad regex or SURT prefix named before the crawl starts."""
    r = config.render
    try:
        UrlRules.of(r.include, (), r.include_surt, (), section="render")
        rules_ok, problem = True, ""
    except ConfigError as exc:
        rules_ok, problem = False, str(exc)
    return [
        (rules_ok, problem),
        (r.timeout_s > 0, "render.timeout_s must be > 0"),
        (r.max_pages >= 1, "render.max_pages must be >= 1"),
        (r.max_subresources >= 0, "render.max_subresources must be >= 0"),
        (bool(r.browser_path), "render.browser_path must name the Chromium executable"),
    ]
