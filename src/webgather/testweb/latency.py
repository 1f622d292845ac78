"""A synthetic network-latency model for the GNP experiments. Pure.

Every name (a host of the web, or a client's IP address) gets a point in the
unit square: it belongs to one of ``n_cities`` cities (by hash) and sits near
that city's centre (hashed jitter). ``latency_s(client_ip, host)`` is
``base_s + per_unit_s * distance``: a metric, so GNP coordinates can recover
it, and clustered, so "the nearest crawlers" of a site is a meaningful set
(the GNP paper's 30 crawlers in 4 cities).

On one machine the client's address is the node's ``--source-address``
(127.0.0.0/8 has room for every node), so each node sits in a city and the
server's delay for a request depends on the pair (client address, host): the
effect GNP assignment exploits is measurable on loopback. ``testweb serve
--latency-model cities:N`` turns it on (:func:`parse_latency_model`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from webgather.errors import ConfigError
from webgather.testweb.rand import derive, key64, unit

__all__ = ["LatencyModel", "parse_latency_model"]


@dataclass(frozen=True, slots=True)
class LatencyModel:
    seed: int = 0
    n_cities: int = 4
    base_s: float = 0.002
    """Latency at distance 0."""
    per_unit_s: float = 0.05
    """Added latency per unit of distance (the square's diagonal is ~1.41)."""
    jitter: float = 0.08
    """Half-width of a name's offset from its city centre."""

    def city(self, name: str) -> int:
        return key64("city", self.seed, name) % max(1, self.n_cities)

    def city_centre(self, city: int) -> tuple[float, float]:
        key = key64("centre", self.seed, city)
        return 0.1 + 0.8 * unit(derive(key, 1)), 0.1 + 0.8 * unit(derive(key, 2))

    def position(self, name: str) -> tuple[float, float]:
        """Coordinates of a host name or client address."""
        cx, cy = self.city_centre(self.city(name))
        key = key64("jitter", self.seed, name)
        dx = (unit(derive(key, 1)) * 2.0 - 1.0) * self.jitter
        dy = (unit(derive(key, 2)) * 2.0 - 1.0) * self.jitter
        return cx + dx, cy + dy

    def latency_s(self, client_ip: str, host: str) -> float:
        """One-way extra delay the server adds for ``client_ip`` asking ``host``."""
        (ax, ay), (bx, by) = self.position(client_ip), self.position(host.partition(":")[0].lower())
        return self.base_s + self.per_unit_s * math.hypot(ax - bx, ay - by)


def parse_latency_model(spec: str, seed: int) -> LatencyModel:
    """``cities:N`` or ``cities:N:MS`` (N in 1..64 cities; MS: ms of delay per unit of distance,
    1..10000, default 50: the unit square's side) -> the model; anything else is a ConfigError."""
    kind, count, *more = spec.split(":") if ":" in spec else (spec, "")
    scale = more[0] if len(more) == 1 else "50" if not more else ""
    if kind != "cities" or not count.isdigit() or not 1 <= int(count) <= 64 \
            or not scale.isdigit() or not 1 <= int(scale) <= 10_000:
        raise ConfigError(f"--latency-model must be cities:N or cities:N:MS (N in 1..64, MS in 1..10000), got {spec!r}")
    return LatencyModel(seed=seed, n_cities=int(count), per_unit_s=int(scale) / 1000.0)
