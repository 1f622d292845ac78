"""Which proxy, if any, one URL goes through. Pure: the environment comes in as a mapping.

Order, first answer wins (the ``[fetch] proxy`` docstring says the same):

1. ``[fetch] proxy_rules``: the first entry whose host glob matches the URL's host.
2. ``[fetch] proxy``: a proxy, or ``"direct"``.
3. Only when neither is set, the environment as curl and Python's ``urllib``
   read it: ``http_proxy``/``HTTP_PROXY`` for http URLs,
   ``https_proxy``/``HTTPS_PROXY`` for https ones (the lower-case name first;
   the upper-case ``HTTP_PROXY`` is ignored under CGI, where ``REQUEST_METHOD``
   is set and a request's ``Proxy:`` header would land in it: "httpoxy"),
   unless ``no_proxy``/``NO_PROXY`` names the host.
4. Direct.

``NO_PROXY``: comma- or space-separated entries; ``*`` alone bypasses every
host; ``example.com`` (or ``.example.com``, ``*.example.com``) bypasses that
domain and its subdomains; an IP address or CIDR network bypasses IP-literal
hosts inside it; ``host:port`` only that port.

A proxy found in the environment that this client cannot use (``socks5://``,
``https://``) is a :class:`ConfigError` when the client starts, never a silent
direct connection.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from webgather.config import FetchConfig
from webgather.config.proxyspec import Proxy, host_glob, parse_proxy
from webgather.errors import ProxyAuthFailed, ProxyRefused
from webgather.fetch.request import WireTarget

__all__ = ["ProxyRouter", "bypasses", "check_answer", "connect_request", "parse_no_proxy"]

_SCHEMES = ("http", "https")


@dataclass(frozen=True, slots=True)
class _Rule:
    glob: re.Pattern[str]
    proxy: Proxy | None


@dataclass(frozen=True, slots=True)
class _Bypass:
    """One ``NO_PROXY`` entry: a domain (``""`` with ``everything``), or a network; maybe one port."""

    domain: str = ""
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None
    everything: bool = False


class ProxyRouter:
    """``route(target) -> Proxy | None`` (None: connect directly); see the module docstring."""

    def __init__(self, rules: tuple[_Rule, ...] = (), fallback: Mapping[str, Proxy | None] | None = None,
                 bypass: tuple[_Bypass, ...] = ()) -> None:
        self._rules = rules
        self._fallback = dict(fallback or {})
        self._bypass = bypass

    @classmethod
    def from_config(cls, config: FetchConfig, env: Mapping[str, str]) -> ProxyRouter:
        """The router for ``config``, reading ``env`` only when the config names no proxy at all."""
        rules = tuple(
            _Rule(host_glob(r.pattern, f"fetch.proxy_rules[{n}]"), parse_proxy(r.proxy, f"fetch.proxy_rules[{n}]"))
            for n, r in enumerate(config.proxy_rules, start=1)
        )
        if config.proxy is not None:
            proxy = parse_proxy(config.proxy, "fetch.proxy")
            return cls(rules, {scheme: proxy for scheme in _SCHEMES})
        if rules:
            return cls(rules)
        fallback: dict[str, Proxy | None] = {}
        for scheme in _SCHEMES:
            name, value = _env_proxy(env, scheme)
            fallback[scheme] = parse_proxy(value, name) if value else None
        return cls((), fallback, parse_no_proxy(_first(env, "no_proxy", "NO_PROXY")[1]))

    @property
    def proxies(self) -> frozenset[Proxy]:
        """Every proxy this router may answer (their hosts are resolved without the address guard)."""
        found = {r.proxy for r in self._rules} | set(self._fallback.values())
        return frozenset(p for p in found if p is not None)

    def route(self, target: WireTarget) -> Proxy | None:
        host = target.host
        for rule in self._rules:
            if rule.glob.match(host):
                return rule.proxy
        proxy = self._fallback.get(target.scheme)
        if proxy is None or bypasses(self._bypass, host, target.port):
            return None
        return proxy


def _env_proxy(env: Mapping[str, str], scheme: str) -> tuple[str, str]:
    lower, upper = f"{scheme}_proxy", f"{scheme.upper()}_PROXY"
    if scheme == "http" and "REQUEST_METHOD" in env:  # CGI: HTTP_PROXY may be a request's Proxy header
        return lower, env.get(lower, "").strip()
    return _first(env, lower, upper)


def _first(env: Mapping[str, str], *names: str) -> tuple[str, str]:
    """The first of ``names`` set to a non-empty value in ``env``: (name, value), else (names[0], "")."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return names[0], ""


def parse_no_proxy(text: str) -> tuple[_Bypass, ...]:
    """``NO_PROXY``'s entries; what cannot be read is skipped (curl and urllib do the same)."""
    entries: list[_Bypass] = []
    for raw in text.replace(",", " ").split():
        entry = raw.strip().lower()
        if entry == "*":
            entries.append(_Bypass(everything=True))
            continue
        entry, port = _split_port(entry)
        try:
            entries.append(_Bypass(network=ipaddress.ip_network(entry.strip("[]"), strict=False), port=port))
            continue
        except ValueError:
            pass
        domain = entry.removeprefix("*").lstrip(".")
        if domain:
            entries.append(_Bypass(domain=domain.rstrip("."), port=port))
    return tuple(entries)


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [v6]:port
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    host, colon, port = entry.rpartition(":")
    if colon and port.isdigit() and ":" not in host:
        return host, int(port)
    return entry, None


def bypasses(entries: tuple[_Bypass, ...], host: str, port: int) -> bool:
    """Does a ``NO_PROXY`` entry name ``host`` (lower-case, IPv6 without brackets) at ``port``?"""
    if not entries:
        return False
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in entries:
        if entry.everything:
            return True
        if entry.port is not None and entry.port != port:
            continue
        if entry.network is not None:
            if address is not None and address.version == entry.network.version and address in entry.network:
                return True
        elif host == entry.domain or host.endswith("." + entry.domain):
            return True
    return False


def connect_request(target: WireTarget, proxy: Proxy) -> bytes:
    """``CONNECT host:port HTTP/1.1`` (RFC 9110 9.3.6), with Host and the proxy's credentials."""
    authority = f"[{target.host}]:{target.port}" if ":" in target.host else f"{target.host}:{target.port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.authorization:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def check_answer(status: int, reason: str, proxy: Proxy) -> None:
    """Raise for a proxy's answer that is not a go-ahead: 407 ``proxy_auth``, else ``proxy_refused``."""
    if status == 407:
        raise ProxyAuthFailed(f"{proxy.shown} answered 407 {reason}".rstrip()
                              + (": wrong credentials" if proxy.authorization else ": it wants credentials"))
    if not 200 <= status < 300:
        raise ProxyRefused(f"{proxy.shown} answered CONNECT with {status} {reason}".rstrip())
