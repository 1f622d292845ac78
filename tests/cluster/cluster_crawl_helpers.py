"""Helpers for the cluster crawl tests: a small synthetic web, crawl-log readers, ownership checks."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from webgather.cluster.mapping import bucket_of
from webgather.config import ClusterConfig, CrawlConfig, PolitenessConfig
from webgather.store.crawllog import read_crawl_log
from webgather.testweb.params import WebParams, crawl_config_for
from webgather.urls import host_key

NOT_FETCHED = ("robots", "robots_unavailable", "off_scope")


def small_web(**overrides: Any) -> WebParams:
    return WebParams.for_tests(**overrides)


def cluster_config(params: WebParams, out: Path, resolve: Path, *, n_buckets: int = 64,
                   min_delay_s: float = 0.0, **cluster: Any) -> CrawlConfig:
    config = crawl_config_for(params)
    politeness = dataclasses.replace(config.politeness, min_delay_s=min_delay_s)
    values: dict[str, Any] = {"n_buckets": n_buckets, "heartbeat_s": 0.1, "member_ttl_s": 1.0,
                              "claim_idle_s": 5.0, "handoff_timeout_s": 5.0}
    values.update(cluster)
    return dataclasses.replace(
        config, out_dir=str(out), politeness=politeness,
        fetch=dataclasses.replace(config.fetch, resolve_file=str(resolve)),
        cluster=ClusterConfig(**values),
    )


def fetch_entries(out: Path) -> list[dict[str, Any]]:
    """Final page/sitemap fetches of every node (the crawl's fetched set, with node and time)."""
    found = []
    for log in sorted(out.glob("nodes/*/crawl.log.jsonl")):
        for entry in read_crawl_log(log):
            if not entry.get("retry") and entry.get("kind") in ("page", "sitemap") \
                    and entry.get("error") not in NOT_FETCHED:
                found.append(entry)
    return found


def duplicates(entries: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(e["url"] for e in entries)
    return {url: n for url, n in counts.items() if n > 1}


def ownership_intervals(summaries: Iterable[dict[str, Any]], end: float) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """(node, bucket) -> [(ready at, lost at or end)] from the nodes' ownership logs."""
    spans: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for summary in summaries:
        opened: dict[int, float] = {}
        for wall, what, bucket in summary["ownership_log"]:
            if what == "ready":
                opened[bucket] = wall
            elif bucket in opened:
                spans[(summary["node"], bucket)].append((opened.pop(bucket), wall))
        for bucket, since in opened.items():
            spans[(summary["node"], bucket)].append((since, end))
    return spans


def misplaced_fetches(entries: Iterable[dict[str, Any]], spans: dict[tuple[str, int], list[tuple[float, float]]],
                      n_buckets: int) -> list[str]:
    """Fetches made by a node that did not own the host's bucket at that time."""
    bad = []
    for entry in entries:
        bucket = bucket_of(host_key(entry["url"]), n_buckets)
        t = float(entry["fetched_at"])
        if not any(a - 0.002 <= t <= b + 0.002 for a, b in spans.get((entry["node"], bucket), [])):
            bad.append(f"{entry['node']} fetched {entry['url']} at {t} (bucket {bucket})")
    return bad


def overlapping_owners(spans: dict[tuple[str, int], list[tuple[float, float]]]) -> list[str]:
    """Buckets that two nodes held at the same time."""
    by_bucket: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for (node, bucket), intervals in spans.items():
        by_bucket[bucket] += [(a, b, node) for a, b in intervals]
    bad = []
    for bucket, intervals in by_bucket.items():
        intervals.sort()
        for (a1, b1, n1), (a2, _b2, n2) in zip(intervals, intervals[1:]):
            if a2 < b1 - 0.002 and n1 != n2:
                bad.append(f"bucket {bucket}: {n1} until {b1}, {n2} from {a2}")
    return bad


def slow_politeness(config: CrawlConfig, min_delay_s: float) -> CrawlConfig:
    return dataclasses.replace(config, politeness=PolitenessConfig(**{
        **dataclasses.asdict(config.politeness), "min_delay_s": min_delay_s}))


def write_toml(config: CrawlConfig, path: Path) -> Path:
    """The config's sections as a TOML file (for ``--config``): what a process node must agree on."""
    lines = []
    for section in ("politeness", "fetch", "scope", "robots", "cluster"):
        lines.append(f"[{section}]")
        for key, value in dataclasses.asdict(getattr(config, section)).items():
            if value is None:
                continue
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (int, float)):
                text = repr(value)
            elif isinstance(value, (tuple, list)):
                text = "[" + ", ".join(f'"{v}"' for v in value) + "]"
            else:
                text = f'"{value}"'
            lines.append(f"{key} = {text}")
    path.write_text("\n".join(lines) + "\n")
    return path
