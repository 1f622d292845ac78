"""Which addresses a crawl may connect to: the destination guard. Pure.

A crawler follows links written by strangers, so without a guard any page can
make it connect to the machine's own services (``http://127.0.0.1:6379/``), the
cloud metadata endpoint (``169.254.169.254``) or the office network (SSRF).
:class:`AddressGuard` refuses such addresses. It judges the *resolved* address,
never the URL's spelling: ``0x7f000001``, ``2130706433`` and ``127.1`` are all
127.0.0.1 once parsed (the WHATWG parser normalizes IPv4 hosts), and a public
name whose DNS answer is private is caught too. The resolver asks it for every
address it hands out, so both transports, redirect targets (fetched like any
link) and robots.txt fetches pass through it.

Private here means not globally reachable (``ipaddress``' ``is_global``: RFC 1918,
loopback, link-local, fc00::/7, 100.64/10 CGNAT, documentation and benchmark
ranges), plus multicast, reserved and unspecified, and IPv6 forms that carry
such an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, 6to4 ``2002::/16``).
``allow`` lists networks exempt from that rule: ``127.0.0.0/8`` for the
synthetic web, or an intranet one means to crawl.

Through an HTTP proxy (``fetch.proxy``) the origin's name is still resolved
here and its address judged before anything is sent, though the proxy makes
the connection: what a page names must not become the proxy's request to the
machine's own services either. (The proxy resolves the name again; a name
whose answer differs there is the proxy's ACLs' business.) The proxy's own
address is not judged (:meth:`Resolver.resolve_trusted`): the operator named
it, a page cannot, and exempting its network in ``allow`` would open that
network to every page's links.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from webgather.config import FetchConfig
from webgather.errors import ConfigError, ForbiddenAddress

__all__ = ["AddressGuard", "is_private", "parse_networks"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_VERDICTS = 65_536


def parse_networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """``"127.0.0.0/8"``, ``"::1"`` (one address) ... as networks; ConfigError names a bad one."""
    networks: list[Network] = []
    for cidr in cidrs:
        try:
            networks.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError:
            raise ConfigError(f"fetch.allow_addresses: {cidr!r} is not an address or CIDR network") from None
    return tuple(networks)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    return ip.ipv4_mapped or ip.sixtofour


def is_private(ip: Address) -> bool:
    """True if ``ip`` is not a public unicast address (see the module docstring)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None and is_private(inner):
            return True
    return not ip.is_global or ip.is_multicast or ip.is_reserved or ip.is_unspecified


class AddressGuard:
    """``check(host, address)`` raises :class:`ForbiddenAddress` for an address the crawl must not reach."""

    def __init__(self, deny_private: bool, allow: Iterable[str] = ()) -> None:
        self.deny_private = deny_private
        self.allow = parse_networks(allow)
        self._verdicts: dict[str, bool] = {}
        """Per address: judging one costs ~8 us (ipaddress), a fetch ~60 us CPU; crawls revisit few addresses."""

    @classmethod
    def from_config(cls, config: FetchConfig) -> AddressGuard:
        return cls(config.deny_private_addresses, config.allow_addresses)

    def permits(self, address: str) -> bool:
        if not self.deny_private:
            return True
        ip: Address = ipaddress.ip_address(address)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # the allow-list speaks of the address the packets go to
        if not is_private(ip):
            return True
        return any(ip.version == net.version and ip in net for net in self.allow)

    def check(self, host: str, address: str) -> None:
        permitted = self._verdicts.get(address)
        if permitted is None:
            try:
                permitted = self.permits(address)
            except ValueError:  # a lookup that answered no IP address cannot be judged, so it is not reached
                raise ForbiddenAddress(f"{host}: {address!r} is not an IP address") from None
            if len(self._verdicts) >= MAX_VERDICTS:
                self._verdicts.clear()
            self._verdicts[address] = permitted
        if not permitted:
            raise ForbiddenAddress(
                f"{host} is at {address}, a private address (fetch.deny_private_addresses; "
                "exempt networks with fetch.allow_addresses or --allow-address)"
            )
