"""What a bucket's hosts told this node, moving with the bucket: settled robots.txt state and cookies.

A node that takes a bucket over must not ask its hosts for robots.txt again
while the rules the old owner fetched are fresh, and must send the cookies
those hosts set. :func:`with_settled` adds both to an exported bucket (from the
node's robots store, :mod:`webgather.runtime.engine.robots_store`, which holds
every settled host, and from the cookie jar); :func:`install_settled` puts them
into the new owner's robots store and jar before the hosts are adopted. The
gate reads a stored row back when the host's first URL comes up (as it does
after an eviction), so robots.txt is asked for again only once the rules'
TTL has passed; a host whose robots.txt was still being retried has nothing
settled and is asked again.

The TTL travels as seconds left at the export (``BucketState.settled_wall``,
the old owner's wall clock): the new owner takes off the time since then (a
checkpoint restored long after it was taken), never adds any (a clock behind
the old owner's). Only hosts of the bucket's own clocks and items are installed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from webgather.clock import Clock
from webgather.errors import StoreError
from webgather.fetch.cookies import CrawlCookies, decode_cookies, encode_cookies
from webgather.frontier.bucket import BucketState, HostSettled
from webgather.runtime.engine.robots_store import RobotsStore
from webgather.urls import host_key

__all__ = ["HostState", "export_settled", "forget_settled", "install_settled", "with_settled"]

log = logging.getLogger(__name__)


class HostState(Protocol):
    """Where a node keeps what its hosts told it (a node's ``NodeParts``, or a dead node's state on disk)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def robots_store(self) -> RobotsStore: ...

    @property
    def cookies(self) -> CrawlCookies | None: ...


def export_settled(parts: HostState, hosts: Iterable[str], wall: float) -> tuple[HostSettled, ...]:
    """The settled robots state (fresh at ``wall``) and cookies of ``hosts``, for those that have any."""
    out = []
    for host in sorted(set(hosts)):
        kept = _kept(parts.robots_store, host, wall)
        robots, ttl_s = (kept[1], kept[0] - wall) if kept is not None else (b"", 0.0)
        cookies = parts.cookies.of_host(host) if parts.cookies is not None else []
        if robots or cookies:
            out.append(HostSettled(host, robots, ttl_s, encode_cookies(cookies) if cookies else b""))
    return tuple(out)


def _kept(store: RobotsStore, host: str, wall: float) -> tuple[float, bytes] | None:
    """The host's fresh row; None if the store cannot be read (the rules are a cache: the new owner
    asks robots.txt again, the hand-off goes on)."""
    try:
        return store.get(host, wall)
    except StoreError as exc:
        log.warning("robots state of %s not handed over: %s", host, exc)
        return None


def _hosts_of(state: BucketState) -> set[str]:
    return {clock.host for clock in state.hosts} | {host_key(item.url) for item in state.items}


def with_settled(parts: HostState, state: BucketState) -> BucketState:
    """``state`` with its hosts' settled state, taken now."""
    wall = parts.clock.wall()
    return replace(state, settled=export_settled(parts, _hosts_of(state), wall), settled_wall=wall)


def install_settled(parts: HostState, state: BucketState) -> int:
    """Keep a handed-over bucket's settled host state here; returns the hosts whose rules were kept."""
    wall = parts.clock.wall()
    elapsed_s = max(0.0, wall - state.settled_wall)
    ours = _hosts_of(state)
    kept = 0
    for settled in state.settled:
        if settled.host not in ours:
            continue
        ttl_s = settled.robots_ttl_s - elapsed_s
        if settled.robots and ttl_s > 0:  # an expired rule is not kept: robots.txt is asked again
            try:
                parts.robots_store.put(settled.host, wall + ttl_s, settled.robots)
                kept += 1
            except StoreError as exc:  # a cache: the host's robots.txt is asked again, the import goes on
                log.warning("robots state of %s handed over not kept: %s", settled.host, exc)
        if settled.cookies and parts.cookies is not None:
            try:
                parts.cookies.install(decode_cookies(settled.cookies))
            except ValueError as exc:  # checked on the wire already: a foreign payload at most
                log.warning("cookies of %s handed over unreadable (%s): left out", settled.host, exc)
    return kept


def forget_settled(parts: HostState, hosts: Iterable[str]) -> None:
    """These hosts went to another node with their cookies: drop their host-only cookies here (their
    robots rows stay on disk, still true if the hosts come back)."""
    if parts.cookies is not None:
        for host in hosts:
            parts.cookies.forget_host(host)
