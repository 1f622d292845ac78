"""The host table of a synthetic web: names, addresses, sizes, robots kinds. Pure.

Everything here is per host (a few arrays of ``n_hosts`` entries), computed
once when a model is built; nothing per page is materialized.

* Names ``h0001.web.test`` ... (at least four digits).
* Addresses: ``hosts_per_ip`` consecutive hosts share one address in
  127.0.0.0/8, starting at 127.0.1.1 (virtual hosting; never all on 127.0.0.1).
* Content pages per host: lognormal with log-sd ``pages_sigma`` from the
  host's key, rescaled (largest remainder) so the web has exactly
  ``params.n_pages`` pages and every host at least one.
* Robots kind and sitemap flag: from golden-ratio sequences, so a share p shows
  up about once every 1/p hosts even in a small web; h0001 is always
  ``allow`` with a sitemap (the default seed host sees everything).
* Fixture counts per (host, kind): see :class:`~webgather.testweb.params.FaultRates`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from webgather.testweb.params import FIXTURE_KINDS, WebParams
from webgather.testweb.rand import (
    derive, derive_arr, key64, lognormal_from_unit_arr, pick_from_mix, unit, unit_arr, weyl,
)

__all__ = ["HostTable", "build_hosts", "ip_address"]

S_PAGES = 11
S_PERM = 12
S_FIXTURE = 1000
_PRIMES = (1_000_003, 998_244_353, 1_000_000_007, 104_729, 7_919, 6_700_417, 2_147_483_647)


@dataclass(frozen=True, eq=False)
class HostTable:
    names: tuple[str, ...]
    index: dict[str, int]
    """Host name -> host id."""
    addresses: tuple[str, ...]
    """IPv4 loopback address of each host."""
    keys: np.ndarray
    """uint64 key of each host: BLAKE2b of (seed, name)."""
    key_list: tuple[int, ...]
    pages: np.ndarray
    """int64 content pages per host."""
    offsets: np.ndarray
    """int64 global id of each host's first page; offsets[-1] is the page total."""
    perm_mult: np.ndarray
    """int64 multiplier of the rank -> page index bijection (coprime to pages - 1)."""
    perm_add: np.ndarray
    cross_cdf: np.ndarray
    """float64 cumulative share of cross-host targets per host (proportional to size)."""
    robots: tuple[str, ...]
    sitemap: tuple[bool, ...]
    fixtures: np.ndarray
    """int64 (n_hosts, len(FIXTURE_KINDS)) fixture counts."""

    @property
    def n_hosts(self) -> int:
        return len(self.names)

    def fixture_count(self, host: int, kind: str) -> int:
        return int(self.fixtures[host, FIXTURE_KINDS.index(kind)])


def ip_address(ip_index: int) -> str:
    """The ``ip_index``-th address of the web: 127.0.1.1, 127.0.1.2, ... 127.0.1.254, 127.0.2.1, ..."""
    second, rest = divmod(ip_index, 254 * 254)
    third, fourth = divmod(rest, 254)
    if second > 255:
        raise ValueError("too many addresses for 127.0.0.0/8")
    return f"127.{second}.{third + 1}.{fourth + 1}"


def build_hosts(params: WebParams) -> HostTable:
    n = params.n_hosts
    width = max(4, len(str(n)))
    names = tuple(f"h{i + 1:0{width}d}.{params.domain}" for i in range(n))
    key_list = tuple(key64("host", params.seed, name) for name in names)
    keys = np.array(key_list, dtype=np.uint64)
    pages = _page_counts(keys, params)
    offsets = np.concatenate(([0], np.cumsum(pages))).astype(np.int64)
    mult, add = _permutations(key_list, pages)
    cross_cdf = np.cumsum(pages / pages.sum())
    cross_cdf[-1] = 1.0
    robots, sitemap = _robots_kinds(params)
    return HostTable(
        names=names, index={name: i for i, name in enumerate(names)},
        addresses=tuple(ip_address(i // params.hosts_per_ip) for i in range(n)),
        keys=keys, key_list=key_list, pages=pages, offsets=offsets, perm_mult=mult,
        perm_add=add, cross_cdf=cross_cdf, robots=robots, sitemap=sitemap,
        fixtures=_fixture_counts(key_list, pages, sitemap, params),
    )


def _page_counts(keys: np.ndarray, params: WebParams) -> np.ndarray:
    raw = lognormal_from_unit_arr(unit_arr(derive_arr(keys, S_PAGES)), 1.0, params.pages_sigma)
    total = params.n_pages
    spare = total - len(raw)
    share = raw / raw.sum() * spare
    base = np.floor(share).astype(np.int64)
    short = spare - int(base.sum())
    if short > 0:
        order = np.argsort(-(share - base), kind="stable")
        base[order[:short]] += 1
    counts: np.ndarray = base + 1
    return counts


def _permutations(key_list: tuple[int, ...], pages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mult = np.ones(len(key_list), dtype=np.int64)
    add = np.zeros(len(key_list), dtype=np.int64)
    for i, key in enumerate(key_list):
        m = int(pages[i]) - 1
        if m <= 1:
            continue
        draw = derive(key, S_PERM)
        start = draw % len(_PRIMES)
        for step in range(len(_PRIMES)):
            prime = _PRIMES[(start + step) % len(_PRIMES)]
            if math.gcd(prime % m, m) == 1 and prime % m != 0:
                mult[i] = prime % m
                break
        add[i] = (draw >> 20) % m
    return mult, add



def _robots_kinds(params: WebParams) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    offset_kind = unit(key64("robots-kind", params.seed))
    offset_map = unit(key64("sitemap", params.seed))
    kinds = ["allow"] + [pick_from_mix(params.robots_mix, weyl(i, offset_kind)) for i in range(1, params.n_hosts)]
    maps = [True] + [
        weyl(i, offset_map) < params.sitemap_share and kinds[i] not in ("error", "garbage", "missing")
        for i in range(1, params.n_hosts)
    ]
    return tuple(kinds), tuple(maps)


def _fixture_counts(
    key_list: tuple[int, ...], pages: np.ndarray, sitemap: tuple[bool, ...], params: WebParams
) -> np.ndarray:
    counts = np.zeros((len(key_list), len(FIXTURE_KINDS)), dtype=np.int64)
    for k, kind in enumerate(FIXTURE_KINDS):
        rate = params.faults.rate(kind)
        if rate <= 0:
            continue
        if kind == "bomb":
            counts[0, k] = 1
            continue
        for h, key in enumerate(key_list):
            if kind == "orphan" and not sitemap[h]:
                continue
            counts[h, k] = math.floor(rate * int(pages[h]) + unit(derive(key, S_FIXTURE + k)))
        counts[0, k] = max(1, counts[0, k])
    return counts
