"""The configuration's sections: every default, one docstring per field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "DEFAULT_USER_AGENT",
    "ClusterConfig",
    "CrawlConfig",
    "RenderConfig",
    "FetchConfig",
    "FrontierConfig",
    "HooksConfig",
    "ParseConfig",
    "PolitenessConfig",
    "ProxyRule",
    "RecrawlConfig",
    "RobotsConfig",
    "ScopeConfig",
    "StoreConfig",
]

DEFAULT_USER_AGENT = "webgather/0.1 (+https://github.com/webgather/webgather)"


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    min_delay_s: float = 1.0
    """Minimum time between the end of one request to a host and the start of the next."""
    adaptive_delay_factor: float = 0.0
    """If > 0, delay = max(min_delay_s, factor x last response time), clamped to max_delay_s."""
    max_delay_s: float = 60.0
    """Upper clamp for the adaptive delay."""
    max_crawl_delay_s: float = 30.0
    """robots.txt Crawl-delay is honoured up to this many seconds."""
    per_host_connections: int = 1
    """Concurrent requests to one host."""
    per_ip_connections: int = 4
    """Concurrent requests to one IP address, across all hosts on it."""
    backoff_base_s: float = 2.0
    """First backoff after a transient error; doubles per consecutive error."""
    backoff_max_s: float = 600.0
    """Cap on the per-host error backoff."""
    retry_after_max_s: float = 600.0
    """The longest Retry-After (429/503) waited for: a longer one gives the URL up (error retry_after,
    the response archived) and holds its host this long, so one answer cannot hold a crawl's end for hours."""


@dataclass(frozen=True, slots=True)
class ProxyRule:
    """One entry of ``[fetch] proxy_rules``: hosts matching ``pattern`` go through ``proxy``."""

    pattern: str
    """A host glob (fnmatch's ``*``, ``?``, ``[...]``; case-insensitive; the host only, no port):
    ``*.example.com`` matches its subdomains, not example.com itself; ``*`` matches every host."""
    proxy: str
    """``http://[user:password@]host:port``, or ``"direct"``: no proxy for these hosts."""


@dataclass(frozen=True, slots=True)
class FetchConfig:
    concurrency: int = 64
    """Requests in flight at one node, robots.txt included (with --workers N: at each of the N). A node's
    own setting, from its own file, environment and flags (webgather.config.local), never the crawl's."""
    connect_timeout_s: float = 10.0
    """TCP (and TLS) connection set-up; also the limit of one DNS lookup."""
    total_timeout_s: float = 30.0
    """Whole request, headers and body."""
    max_body_bytes: int = 10 * 1024 * 1024
    """Bytes of body kept; a longer body is truncated and recorded as too_large."""
    max_decoded_bytes: int = 50 * 1024 * 1024
    """Decompressed bytes allowed, every content coding's output counted together; past this a body is a bomb."""
    max_redirects: int = 5
    """Redirect hops followed from one URL; one more is recorded as redirect_loop."""
    max_retries: int = 2
    """Extra attempts for transient failures (timeouts, resets, 5xx, 429)."""
    user_agent: str = DEFAULT_USER_AGENT
    """Sent as User-Agent; its product token is matched against robots.txt groups."""
    parse_content_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    """Content types whose 2xx bodies are parsed for links (others are archived only)."""
    dns_ttl_s: float = 300.0
    """A host's resolved address is reused this long (a failed lookup at most 30 s)."""
    resolve_file: str | None = None
    """Static ``host address`` map: resolve once, keep in a file (repeatable runs)."""
    max_idle_connections: int = 1024
    """Kept-alive connections waiting for their host's next request (oldest closed first)."""
    http_client: Literal["native", "aiohttp"] = "native"
    """The HTTP/1.1 transport: ours over asyncio protocols (less CPU per fetch), or aiohttp's."""
    deny_private_addresses: bool = True
    """Refuse to connect to loopback, RFC 1918, link-local, fc00::/7, CGNAT, multicast, reserved and
    unspecified addresses (and IPv6 forms carrying them), judged on the resolved address whatever the
    URL's spelling: pages cannot steer the crawler into internal services. Logged as forbidden_address."""
    allow_addresses: tuple[str, ...] = ()
    """Networks (CIDR, or one address) exempt from deny_private_addresses, e.g. "127.0.0.0/8"."""
    source_address: str | None = None
    """Local IP address that outgoing connections bind to (a node's own address; per node, not per crawl)."""
    proxy: str | None = None
    """HTTP proxy: "http://[user:password@]host:port" (credentials sent as Basic Proxy-Authorization), or
    "direct" (none, the environment's ignored too). Per URL, first match wins: a proxy_rules entry; else this
    setting (file < WEBGATHER_FETCH__PROXY < --proxy); else, only when neither this nor proxy_rules is set,
    the environment: http_proxy/HTTP_PROXY for http URLs, https_proxy/HTTPS_PROXY for https ones (lower-case
    first), unless no_proxy/NO_PROXY names the host; else direct. http URLs go to the proxy in absolute
    form, https ones through a CONNECT tunnel with TLS to the origin. The origin's address is still
    resolved here and judged by deny_private_addresses; the proxy's own address is exempt from it (the
    operator named it, a page cannot). Give credentials in WEBGATHER_FETCH__PROXY or a config file, not
    --proxy: every local user can read a process's argv."""
    cookies: bool = True
    """Keep the cookies sites set and send them back (RFC 6265: domain, path, expiry, Secure; no cookie for a
    public suffix), one jar per crawl; the Cookie header sent is in the WARC request record."""
    max_cookies_per_host: int = 50
    """Cookies kept per registrable domain (example.com with its subdomains); the least recently set go first."""
    max_cookie_bytes_per_host: int = 16384
    """Bytes of cookie names and values kept per registrable domain; one cookie over 4096 bytes is refused."""
    proxy_rules: tuple[ProxyRule, ...] = ()
    """Per-host proxies, first matching pattern wins, before ``proxy``: in TOML
    ``[{pattern = "*.example.com", proxy = "http://127.0.0.1:3128"}, {pattern = "intranet.test", proxy = "direct"}]``;
    in WEBGATHER_FETCH__PROXY_RULES or --proxy-rule, "PATTERN PROXY" (comma-separated in the variable)."""


@dataclass(frozen=True, slots=True)
class ScopeConfig:
    mode: Literal["seed-hosts", "domains", "any"] = "seed-hosts"
    """Which hosts to follow links into."""
    domains: tuple[str, ...] = ()
    """For mode "domains": these domains and their subdomains."""
    max_depth: int | None = None
    """Link hops from a seed; redirects do not count as hops."""
    max_pages_per_host: int | None = None
    """Pages fetched from one host at most (None: no limit)."""
    max_url_length: int = 2048
    """Longer URLs are not followed."""
    max_repeated_segments: int = 3
    """A URL whose path repeats one segment more than this is a trap and skipped."""
    include: tuple[str, ...] = ()
    """Regular expressions (Python re, searched in the canonical URL): when this or include_surt is given, a URL
    must match one of them to be followed (seeds too; a page's requisites need not). In WEBGATHER_SCOPE__INCLUDE one
    per line, not comma-separated."""
    exclude: tuple[str, ...] = ()
    """Regular expressions: a canonical URL that one of them matches (re.search) is not followed; exclude wins
    over include. Skipped URLs are counted as "excluded" (Scope.reject). Env: one per line."""
    include_surt: tuple[str, ...] = ()
    """SURT prefixes: Heritrix's "http://(com,example,)/shop/" ("http://(com,example," = the domain and its
    subdomains), pywb's key "com,example)/shop", or a plain URL; matched against the URL's SURT key (scheme and www
    ignored, case-insensitive; webgather.surtkey.surt_prefix). One of them or of include must match. Env: one per line."""
    exclude_surt: tuple[str, ...] = ()
    """SURT prefixes (forms as include_surt) of URLs not followed. Env: one per line."""
    strip_query_params: tuple[str, ...] = ()
    """Query argument names (globs like "utm_*", case-insensitive) removed from every URL before it is fingerprinted,
    so "?sid=1" and "?sid=2" are one URL."""
    requisites: bool = True
    """Fetch what a page needs to be shown (images, stylesheets and what they load, scripts, fonts, icons) as
    requisites: not pages (no links followed, not in the link graph), counted apart. --no-requisites: pages only."""
    requisite_hops: int = 5
    """Requisite hops after a page (Heritrix's E), at most 5: 5 reaches page -> stylesheet -> three @imports -> an image,
    as Sphinx's classic theme needs (pydoctheme.css -> default.css -> classic.css -> basic.css -> file.png)."""
    requisites_any_host: bool = True
    """Requisites of an in-scope page are fetched from any host (a CDN), past the host mode; false: the host mode
    applies to them too. Depth and include rules do not apply; length, exclude rules and the trap guard do."""


@dataclass(frozen=True, slots=True)
class RobotsConfig:
    obey: bool = True
    """Fetch robots.txt and obey it (turn off only for servers you own: ``--ignore-robots``)."""
    ttl_s: float = 86400.0
    """Rules are obeyed this long, then robots.txt is fetched again before the host's next page."""
    error_retry_s: float = 5.0
    """After a 5xx, 429 or timeout of robots.txt the host is disallowed; first retried after this."""
    max_bytes: int = 500 * 1024
    """RFC 9309: parse at least the first 500 KiB."""
    retry_factor: float = 3.0
    """Each further retry waits this many times longer (5 s, 15 s, 45 s by default)."""
    max_tries: int = 4
    """robots.txt fetches that may fail in a row before the host's URLs are dropped (robots_unavailable)."""
    unreachable_retry_s: float = 1.0
    """A host that refuses the connection is retried after this, then twice that (1 s, 2 s by default)."""
    unreachable_tries: int = 3
    """robots.txt fetches refused in a row before such a host's URLs are dropped (robots_unavailable)."""
    max_hosts: int = 10_000
    """Hosts whose rules (or give-up) are kept in memory; every host's are kept on disk too (DIR/state/robots.sqlite),
    so an evicted host's robots.txt is fetched again only once its ttl_s has passed."""


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    order: Literal["bfs", "opic"] = "bfs"
    """bfs: shallowest first; opic: richest in OPIC cash first, within politeness (webgather.frontier.cash)."""
    seen_memory_entries: int = 4_000_000
    """Fingerprints kept in the seen-set's memory tier before a merge to disk."""
    seen_cache_entries: int = 50_000
    """Entries in the cache in front of the seen-set."""
    seen_cache_policy: Literal["lru", "clock", "random", "static"] = "clock"
    """Replacement policy of the cache in front of the seen-set."""
    host_queue_memory: int = 1000
    """URLs per host held in memory; the rest wait on disk."""
    queue_memory_items: int = 250_000
    """URLs held in memory across all hosts' queue heads (persistent frontier); the rest wait on disk."""


@dataclass(frozen=True, slots=True)
class StoreConfig:
    warc_max_bytes: int = 1024 * 1024 * 1024
    """Rotate to a new WARC file past this size."""
    warc_gzip: bool = True
    """Compress WARC files (one gzip member per record, .warc.gz)."""
    write_link_log: bool = True
    """Keep the link log (links.bin) that ``webgather analyze`` reads."""
    revisit_request_records: bool = False
    """Write the request record beside a revisit record too. Off by default: a revisit says
    "unchanged", and its request (which replay never needs) would cost as much as the revisit."""


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Settings of a crawl spread over several nodes (ignored by a one-node crawl)."""

    n_buckets: int = 4096
    """M of the two-stage mapping: partition key -> bucket (hash mod M) -> node. Fixed per crawl."""
    partition_by: Literal["host", "ip", "gnp"] = "host"
    """Partition key: the host, or its address as first resolved by any node (a per-IP cap then holds cluster-wide),
    or "gnp": a host goes to one of its K nearest nodes by GNP coordinates (see runtime.partition.gnp)."""
    batch_urls: int = 64
    """R: a bucket's cross URLs are sent once this many are waiting..."""
    batch_wait_s: float = 0.05
    """T: ...or once the oldest has waited this long, whichever comes first."""
    sent_cache_entries: int = 50_000
    """Sender-side cache of recently sent URL fingerprints (0: no cache)."""
    sent_cache_policy: Literal["lru", "clock"] = "clock"
    """Replacement policy of the sender-side cache."""
    heartbeat_s: float = 0.5
    """How often a node publishes its heartbeat and looks at the bucket table."""
    member_ttl_s: float = 5.0
    """A node whose heartbeat is older than this is dead; its buckets are reassigned."""
    interval_s: float = 10.0
    """Length of a load-balance interval (pages per node per interval)."""
    claim_idle_s: float = 30.0
    """Cross-URL batches delivered this long ago and never acked are re-claimed by the bucket's owner."""
    handoff_timeout_s: float = 60.0
    """Without a shared store, a bucket taken from a dead node starts empty if no state arrives within this time (with one, it is restored from the node's checkpoints)."""
    max_outage_s: float = 300.0
    """While the backend (Redis) is unreachable or the shared store takes no write, a node pauses and retries;
    this long after the backend's last answer (the store's first failure) it stops, keeping its state (exit 6)."""
    lease_margin_s: float = 0.25
    """Fencing: a node starts no request later than ``member_ttl_s - lease_margin_s`` after its last renewal
    (the others declare it dead ``heartbeat_s + lease_margin_s`` after its heartbeat expired)."""
    shared_store: str | None = None
    """Where what must outlive a machine goes (``file:///path`` or ``s3://bucket/prefix``): closed WARC
    files and their CDXJ, and every bucket's checkpoint; a dead node's buckets are restored from it
    (:mod:`webgather.runtime.durability.checkpoint`). None: nothing leaves the nodes' own disks."""
    checkpoint_s: float = 10.0
    """With a shared store: how often a node uploads its closed WARC files and checkpoints its buckets
    (what a lost node fetched since its last checkpoint is fetched again). Below ``claim_idle_s``."""
    gnp_landmarks: tuple[str, ...] = ()
    """With partition_by "gnp": URLs of small pages (>= 2) every node httppings to place itself (GNP landmarks)."""
    gnp_k: int = 3
    """With partition_by "gnp": a host goes to the least loaded of its K nearest nodes (the study's TopK)."""
    gnp_dims: int = 2
    """Dimensions of the GNP coordinate space."""
    gnp_samples: int = 5
    """httpping requests per measurement (the noise filter keeps the fullest ``gnp_modulus_ms`` buckets)."""
    gnp_modulus_ms: float = 5.0
    """Bucket width of the httpping noise filter."""
    gnp_wait_s: float = 2.0
    """A new host waits this long for the nodes' measurements, then falls back to the two-stage mapping."""


@dataclass(frozen=True, slots=True)
class RecrawlConfig:
    """Incremental re-crawl (``crawl --continuous``, ``recrawl``; see :mod:`webgather.recrawl`)."""

    policy: Literal["uniform", "proportional", "optimal"] = "optimal"
    """Revisit policy: same frequency for all, proportional to change rate, or max freshness."""
    cycle_s: float = 86400.0
    """Length of a re-crawl cycle; a page is visited at most once per cycle."""
    budget_per_cycle: int | None = None
    """Page fetches per cycle, revisits and never-seen URLs together (None: no limit)."""
    new_url_share: float = 0.2
    """Share of the budget kept for never-seen URLs while some are queued."""
    conditional_get: bool = True
    """Send If-None-Match / If-Modified-Since with revisits."""
    dedup: bool = True
    """Archive an unchanged payload (same digest) as a revisit record, not a new copy."""
    dead_after_failures: int = 2
    """404/410/DNS-failure visits in a row after which a page is dead."""
    near_dup_max_bits: int = 3
    """SimHashes at most this many bits apart are near-duplicates."""
    max_interval_s: float = 30 * 86400.0
    """Every active page is revisited at least this often."""
    page_life_s: float = 1.43 * 365.25 * 86400.0
    """Mean page life (WebGather measured 1.43 years): a death rate every page's estimate includes."""
    prior_weight: float = 2.0
    """Observations' worth of the population mean in a page's rate estimate (shrinkage)."""
    history_max: int = 64
    """Observations kept per URL for the rate estimate."""


@dataclass(frozen=True, slots=True)
class ParseConfig:
    """Where HTML is parsed (:mod:`webgather.runtime.engine.parse_pool`): inline on the event loop
    when a cheap pre-scan says the page is small, else in a parser process with a deadline."""

    max_seconds: float = 2.0
    """A page parsed in a parser process that takes longer is ``parse_timeout``: the process
    is killed and replaced, the page archived unparsed (no links)."""
    workers: int = 1
    """Parser processes (started on first need, stopped with the node)."""
    inline_max_tags: int = 2000
    """Pages with more ``<`` bytes than this go to a parser process (lexbor's worst case grows
    with the square of the tag count: about 20 ms at 2,000); 0 sends every page there."""
    inline_max_bytes: int = 512 * 1024
    """Pages larger than this go to a parser process, whatever their tag count."""
    max_bytes: int = 8 * 1024 * 1024
    """A larger page is parsed from a prefix of at most this many bytes (cut before a tag), and logged
    ``parse_truncated``: a parser's memory follows the page's size (50 MB of HTML: about 1 GB)."""
    max_tags: int = 500_000
    """A page with more ``<`` bytes is parsed up to the one past this many, and logged ``parse_truncated``:
    lexbor's tree costs up to about 300 bytes per tag (500,000: about 150 MB at most)."""
    max_memory: int = 384 * 1024 * 1024
    """Data memory of each parser process (``RLIMIT_DATA``): a parse that would pass it fails as ``parse_failed``
    (the process lives on). What a prefix within ``max_bytes`` cannot bound: attributes (8 MB of ``<i a b c ...>``: 1 GB)."""


@dataclass(frozen=True, slots=True)
class HooksConfig:
    """Page hooks and where their items go (:mod:`webgather.runtime.engine.page_hooks`, :mod:`webgather.runtime.engine.item_sinks`).
    A top-level ``hooks = "pkg.mod"`` (the older spelling, and ``WEBGATHER_HOOKS``) sets ``hooks.module``."""

    module: str | None = None
    """Page hooks: the import path of a module (``pkg.mod``, importable by the crawl's Python) that defines
    ``on_page(page)`` and/or ``on_link(url)`` (:mod:`webgather.runtime.engine.page_hooks`). Part of the crawl's
    definition: every node of a cluster loads the same module. None: no hooks."""
    items: str | None = None
    """Where the hooks' items go, the format from the suffix: ``.jsonl`` (JSON Lines) or ``.parquet`` (a
    directory of Parquet part files; needs pyarrow). On one node the path as given; in a cluster each node
    writes ``<stem>-<node id><suffix>`` in its own node directory. None: ``items.jsonl`` in the node's directory."""
    items_batch: int = 1000
    """Parquet: items kept in memory before they are written as one part file (one row group)."""
    items_flush_s: float = 10.0
    """Parquet: items are written at most this long after the first unwritten one arrived (a kill -9
    loses the unwritten ones: at most ``items_batch`` items, at most this many seconds of them)."""


@dataclass(frozen=True, slots=True)
class RenderConfig:
    """Pages rendered in headless Chromium through Playwright (:mod:`webgather.runtime.engine.render_stage`):
    the HTML pages of URLs a rule matches are loaded in the browser from the bytes already fetched,
    and their links are taken from the rendered DOM (archived as a WARC ``conversion`` record).
    No rule: nothing is rendered and Playwright is not needed (the ``render`` extra)."""

    include: tuple[str, ...] = ()
    """Render pages whose canonical URL this regex matches (searched; any of the list)."""
    include_surt: tuple[str, ...] = ()
    """Render pages under this SURT prefix, e.g. 'http://(test,web,h0001,)/' (any of the list)."""
    browser_path: str = "/usr/bin/chromium"
    """The Chromium executable Playwright drives (Debian's ``chromium``; never downloaded)."""
    timeout_s: float = 20.0
    """A page not rendered within this is ``render_timeout``: its links come from the fetched HTML."""
    max_pages: int = 2
    """Pages rendering at once on a node (each a browser tab); more wait their turn."""
    max_subresources: int = 32
    """Scripts and XHR a page may load through the crawler's HTTP client; past this they are aborted."""


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    out_dir: str = "crawl-out"
    """Output directory: WARC files, logs, summary and the state a resumed crawl continues from."""
    seeds: tuple[str, ...] = ()
    """Seed URLs (the command line's SEED arguments; a resumed crawl also reads DIR/seeds.txt)."""
    max_pages: int | None = None
    """Pages the crawl fetches in all, over all its runs (a resume continues the count), on one node and
    in a cluster alike (crawl-wide page permits: :mod:`webgather.runtime.member.permits`). A one-node
    run killed -9 wrote no summary: its pages are not counted against the limit."""
    progress: bool = True
    """A live progress display on a terminal."""
    pin_cpu: str = "auto"
    """Keep the node's threads on one CPU: "auto" (the one it starts on), "off", or N (the
    N-th CPU this process may run on; refused if there are not that many); see :mod:`webgather.runtime.engine.affinity`."""
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    fetch: FetchConfig = field(default_factory=FetchConfig)
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    robots: RobotsConfig = field(default_factory=RobotsConfig)
    frontier: FrontierConfig = field(default_factory=FrontierConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    recrawl: RecrawlConfig = field(default_factory=RecrawlConfig)
    parse: ParseConfig = field(default_factory=ParseConfig)
    metrics: str | None = None
    """Serve this node's Prometheus metrics on ``ADDR:PORT`` (``PORT`` alone: 127.0.0.1; port 0: a free
    one, logged at INFO); None: off. With ``--workers N`` worker K listens on PORT+K
    (:mod:`webgather.runtime.metrics.node`)."""
    hooks: HooksConfig = field(default_factory=HooksConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
