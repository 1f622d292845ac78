"""Host name -> IP address: a static map, else DNS through the event loop, cached.

Two layers, kept apart (pure core, IO shell):

* :class:`DnsCache` is pure: answers and failures keyed by host, each with an
  expiry computed from the ``now`` it is given. Failures are cached too
  (negative caching), for a shorter time, so a dead host does not cost one
  lookup per queued URL. The cache is bounded (``max_entries``); when full, the
  oldest entry goes.
* :class:`Resolver` is the shell: static map first (``load_resolve_file``:
  "resolve once, keep in a file", for repeatable runs and for tests whose fake
  host names must never reach a real DNS server), then the cache, then a
  lookup (``loop.getaddrinfo`` unless a ``lookup`` callable is injected),
  bounded by ``lookup_timeout_s``. Every failure is a :class:`DnsFailed`.

Every answer, static ones included, passes the destination guard
(:mod:`webgather.fetch.guard`, ``fetch.deny_private_addresses``) on its way out.

Called by :class:`webgather.fetch.http.HttpClient` (which hands the answer to
aiohttp, so the socket goes to our address while Host and SNI stay the URL's).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from webgather.config import FetchConfig
from webgather.errors import ConfigError, DnsFailed
from webgather.fetch.guard import AddressGuard
from webgather.clock import Clock

__all__ = ["DnsAnswer", "DnsCache", "Lookup", "Resolver", "load_resolve_file", "system_lookup"]

Lookup = Callable[[str], Awaitable[list[str]]]
"""An async host -> addresses lookup; raises OSError (or DnsFailed) when the host does not resolve."""


def load_resolve_file(path: str | Path) -> dict[str, str]:
    """Read a ``host address`` file (one pair a line, ``#`` comments) into a dict.

    Host names are lower-cased, a trailing dot is dropped. Bad lines raise
    :class:`ConfigError` naming the file and line number.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read resolve file {path}: {exc}") from exc
    return parse_resolve_text(text, str(path))


def parse_resolve_text(text: str, source: str = "<resolve>") -> dict[str, str]:
    """The pure half of :func:`load_resolve_file`."""
    mapping: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.partition("#")[0].split()
        if not fields:
            continue
        where = f"{source}:{number}"
        if len(fields) != 2:
            raise ConfigError(f"{where}: expected 'host address', got {line.strip()!r}")
        host, address = _normalize_host(fields[0]), fields[1]
        try:
            address = str(ipaddress.ip_address(address))
        except ValueError:
            raise ConfigError(f"{where}: {address!r} is not an IP address") from None
        if not host or "/" in host:
            raise ConfigError(f"{where}: {fields[0]!r} is not a host name")
        if mapping.get(host, address) != address:
            raise ConfigError(f"{where}: {host} is mapped twice ({mapping[host]}, {address})")
        mapping[host] = address
    return mapping


def _normalize_host(host: str) -> str:
    host = host.lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def ip_literal(host: str) -> str | None:
    """``host`` as a normalized IP address if it is one (IPv6 with or without brackets)."""
    try:
        return str(ipaddress.ip_address(_normalize_host(host)))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class DnsAnswer:
    """A cached lookup: an address, or the reason there is none."""

    address: str | None
    error: str
    expires_at: float


class DnsCache:
    """Pure TTL cache of lookups, with negative entries. Time comes in as ``now``."""

    def __init__(self, ttl_s: float, negative_ttl_s: float, max_entries: int = 100_000) -> None:
        if ttl_s < 0 or negative_ttl_s < 0 or max_entries < 1:
            raise ConfigError("DNS cache: TTLs must be >= 0 and max_entries >= 1")
        self.ttl_s = ttl_s
        self.negative_ttl_s = negative_ttl_s
        self.max_entries = max_entries
        self._entries: dict[str, DnsAnswer] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, host: str, now: float) -> DnsAnswer | None:
        """The live entry for ``host``, or None (absent or expired: then it is dropped)."""
        answer = self._entries.get(host)
        if answer is None:
            return None
        if now >= answer.expires_at:
            del self._entries[host]
            return None
        return answer

    def put_address(self, host: str, address: str, now: float) -> DnsAnswer:
        return self._put(host, DnsAnswer(address, "", now + self.ttl_s))

    def put_failure(self, host: str, error: str, now: float) -> DnsAnswer:
        return self._put(host, DnsAnswer(None, error, now + self.negative_ttl_s))

    def _put(self, host: str, answer: DnsAnswer) -> DnsAnswer:
        self._entries.pop(host, None)
        if len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]
        self._entries[host] = answer
        return answer


async def system_lookup(host: str) -> list[str]:
    """Addresses of ``host`` from the event loop's ``getaddrinfo`` (IPv4 first)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, None, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    addresses = [str(info[4][0]) for info in infos]
    addresses.sort(key=lambda a: ":" in a)  # stable: IPv4 before IPv6, resolver order kept
    return addresses


class Resolver:
    """``await resolve(host) -> address``: static map, then cache, then lookup."""

    def __init__(
        self,
        clock: Clock,
        *,
        static: Mapping[str, str] | None = None,
        ttl_s: float = 300.0,
        negative_ttl_s: float = 30.0,
        lookup_timeout_s: float = 10.0,
        lookup: Lookup | None = None,
        max_entries: int = 100_000,
        guard: AddressGuard | None = None,
    ) -> None:
        self._clock = clock
        self._guard = guard or AddressGuard(deny_private=False)
        self._static = {_normalize_host(h): a for h, a in (static or {}).items()}
        self._cache = DnsCache(ttl_s, min(negative_ttl_s, ttl_s), max_entries)
        self._lookup_timeout_s = lookup_timeout_s
        self._lookup: Lookup = lookup or system_lookup
        self.lookups = 0
        """Lookups that went past the static map and the cache (for stats and tests)."""

    @classmethod
    def from_config(cls, config: FetchConfig, clock: Clock, *, lookup: Lookup | None = None) -> Resolver:
        """A resolver with ``config.resolve_file`` as static map and ``config.dns_ttl_s``."""
        static = load_resolve_file(config.resolve_file) if config.resolve_file else {}
        return cls(
            clock,
            static=static,
            ttl_s=config.dns_ttl_s,
            negative_ttl_s=min(30.0, config.dns_ttl_s),
            lookup_timeout_s=config.connect_timeout_s,
            lookup=lookup,
            guard=AddressGuard.from_config(config),
        )

    @property
    def static(self) -> Mapping[str, str]:
        return self._static

    def pin(self, host: str, address: str) -> None:
        """Answer ``address`` for ``host`` from now on, over the static map and DNS: a cluster
        crawling ``--partition-by ip`` connects where every node's partition says the host is."""
        self._static[_normalize_host(host)] = address

    async def resolve(self, host: str) -> str:
        """The address to connect to for ``host``; raises :class:`DnsFailed`, or
        :class:`~webgather.errors.ForbiddenAddress` where the guard refuses the address."""
        address = await self._answer(_normalize_host(host))
        self._guard.check(host, address)
        return address

    async def resolve_trusted(self, host: str) -> str:
        """The address of a host the operator named, not a page (an HTTP proxy, often on loopback):
        the same static map, cache and lookup, but no guard. Raises :class:`DnsFailed`."""
        return await self._answer(_normalize_host(host))

    async def _answer(self, name: str) -> str:
        fixed = self._static.get(name)
        if fixed is not None:
            return fixed
        answer = self._cache.get(name, self._clock.monotonic())
        if answer is None:
            literal = ip_literal(name)
            if literal is not None:
                return literal
            answer = await self._look_up(name)
        if answer.address is None:
            raise DnsFailed(f"{name}: {answer.error}")
        return answer.address

    async def _look_up(self, name: str) -> DnsAnswer:
        self.lookups += 1
        try:
            async with asyncio.timeout(self._lookup_timeout_s):
                addresses = await self._lookup(name)
        except TimeoutError:
            error = f"lookup timed out after {self._lookup_timeout_s:g} s"
        except DnsFailed as exc:
            error = str(exc) or "does not resolve"
        except (OSError, UnicodeError, ValueError) as exc:
            error = _describe(exc)
        else:
            if addresses:
                return self._cache.put_address(name, addresses[0], self._clock.monotonic())
            error = "no addresses"
        return self._cache.put_failure(name, error, self._clock.monotonic())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
