"""A crawl's cookie jar: what a site sets is sent back to it, as a browser would (RFC 6265).

A site whose home page sets a session cookie and whose other pages answer 403 (or
redirect to a cookie check) without it is archived as the site, not as errors.

The rules are the standard library's (:mod:`http.cookiejar`), tightened to RFC 6265:

* domain: a cookie without ``Domain`` goes back to its host only (host-only); a
  ``Domain`` that the request host does not domain-match, or that is a public suffix
  (``co.uk``, ``github.io``: the list ``publicsuffixlist`` ships, kept current by its
  releases) is refused, unless it is the request host itself (then host-only);
* path: the default path is the request path's directory; ``/a`` matches ``/a`` and
  ``/a/...``, not ``/ab``;
* expiry: ``Expires`` and ``Max-Age``; an expired cookie is dropped, and one without
  either is a session cookie, kept for the crawl;
* ``Secure`` cookies go over https only; ``HttpOnly`` ones are sent (it only hides
  them from scripts, which a crawler does not run).

The jar is sharded by registrable domain (``www.example.com`` and ``shop.example.com``
share ``example.com``'s shard): a cookie can only ever be sent within the registrable
domain that set it, so a request looks at one small jar, not every host's cookies
(the standard jar scans every domain it holds on each request). Limits per shard:
``max_cookies_per_host`` cookies and ``max_cookie_bytes_per_host`` bytes of names and
values, the least recently set evicted first; a cookie over 4096 bytes is refused.

:class:`CookieHttp` wraps the node's HTTP client: it adds the ``Cookie`` header (so
the WARC request record holds it as sent) and stores the response's ``Set-Cookie``.
A ``Cookie`` header the crawl's own hooks set wins over the jar's. The node keeps its jar in
``state/cookies.json`` between runs (:meth:`CrawlCookies.save`, ``runtime.engine.parts``): a resumed crawl
keeps its sessions. In a cluster a host's cookies move with its bucket: the old owner exports the
cookies a request to the host carries (:meth:`CrawlCookies.of_host`, :func:`encode_cookies`), the new
owner installs them (:meth:`CrawlCookies.install`), and the old owner forgets the host's host-only
ones (:meth:`CrawlCookies.forget_host`; a ``Domain`` cookie may still serve its other hosts).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import os
import threading
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any, Protocol

from publicsuffixlist import PublicSuffixList

from webgather.errors import WriteFailed
from webgather.fetch.model import FetchResult, Headers
from webgather.urls import hostname

__all__ = ["MAX_COOKIE_BYTES", "CookieHttp", "CrawlCookies", "decode_cookies", "encode_cookies"]

log = logging.getLogger(__name__)

MAX_COOKIE_BYTES = 4096
"""Name plus value of one cookie at most (RFC 6265 6.1's minimum a user agent supports)."""
_suffix_list: PublicSuffixList | None = None
_suffix_list_lock = threading.Lock()


def _suffixes() -> PublicSuffixList:
    """The public-suffix list, built on first use: building it costs 40-50 ms of CPU, which every
    process start (each worker's too) paid at import, cookies or not. Built once even when threads race."""
    global _suffix_list
    built = _suffix_list
    if built is None:
        with _suffix_list_lock:
            if _suffix_list is None:
                _suffix_list = PublicSuffixList()
            built = _suffix_list
    return built


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=65536)
def site_of(host: str) -> str:
    """The registrable domain of ``host`` (``example.co.uk`` for ``www.example.co.uk``), or the host
    itself (an address, a public suffix, a single label): the shard its cookies live in."""
    host = host.lower().rstrip(".")
    if _is_ip(host):
        return host
    return _suffixes().privatesuffix(host) or host


class _Policy(DefaultCookiePolicy):
    """The standard policy with RFC 6265's host-only cookies and the public-suffix rule."""

    def __init__(self) -> None:
        super().__init__(rfc2965=False, strict_ns_domain=DefaultCookiePolicy.DomainStrictNonDomain)

    def set_ok_domain(self, cookie: Cookie, request: urllib.request.Request) -> bool:
        if not super().set_ok_domain(cookie, request):
            return False
        if not cookie.domain_specified:
            return True
        domain = cookie.domain.lstrip(".").lower()
        host = (request.host or "").partition(":")[0].lower()
        return domain == host or not _suffixes().is_public(domain)


class _Response:
    """The ``info()`` the standard jar reads ``Set-Cookie`` from."""

    def __init__(self, headers: Headers) -> None:
        self._headers = headers

    def info(self) -> _Response:
        return self

    def get_all(self, name: str, default: list[str] | None = None) -> list[str] | None:
        lower = name.lower()
        values = [v for k, v in self._headers if k.lower() == lower]
        return values or default


class _Shard:
    """One registrable domain's cookies, with the order they were last set in (for eviction)."""

    __slots__ = ("jar", "order")

    def __init__(self, policy: _Policy) -> None:
        self.jar = CookieJar(policy)
        self.order: OrderedDict[tuple[str, str, str], int] = OrderedDict()


class CrawlCookies:
    """Every cookie of one crawl, sharded by registrable domain (module docstring)."""

    def __init__(self, max_cookies_per_host: int = 50, max_cookie_bytes_per_host: int = 16384) -> None:
        self._policy = _Policy()
        self._shards: dict[str, _Shard] = {}
        self._max_count = max_cookies_per_host
        self._max_bytes = max_cookie_bytes_per_host
        self.refused = 0
        """Cookies refused for their size or evicted for a shard's limits."""

    def header(self, url: str) -> str | None:
        """The ``Cookie`` header a request for ``url`` carries, or None."""
        if not self._shards:  # no site set one yet: no need for the public-suffix list
            return None
        shard = self._shards.get(site_of(_hostname(url)))
        if shard is None:
            return None
        request = urllib.request.Request(url)
        shard.jar.add_cookie_header(request)
        return request.get_header("Cookie")

    def store(self, url: str, response_headers: Headers) -> None:
        """Keep the cookies a response for ``url`` sets (those the policy accepts)."""
        if not any(k.lower() == "set-cookie" for k, _ in response_headers):
            return
        request = urllib.request.Request(url)
        site = site_of(_hostname(url))
        shard = self._shards.get(site)
        if shard is None:
            shard = self._shards[site] = _Shard(self._policy)
        for cookie in shard.jar.make_cookies(_Response(response_headers), request):  # type: ignore[arg-type]
            self._add(shard, cookie, request)
        for key in [key for key in shard.order if _find(shard.jar, key) is None]:
            del shard.order[key]  # deleted by a Set-Cookie whose expiry is past
        if not shard.order:
            del self._shards[site]

    def _add(self, shard: _Shard, cookie: Cookie, request: urllib.request.Request) -> None:
        size = len(cookie.name) + len(cookie.value or "")
        if size > MAX_COOKIE_BYTES:
            self.refused += 1
            return
        key = (cookie.domain, cookie.path, cookie.name)
        shard.jar.set_cookie_if_ok(cookie, request)
        if _find(shard.jar, key) is not cookie:  # refused by the policy
            return
        shard.order.pop(key, None)  # set again: the most recent now
        shard.order[key] = size
        self._trim(shard)

    def _trim(self, shard: _Shard) -> None:
        while len(shard.order) > self._max_count or sum(shard.order.values()) > self._max_bytes:
            (domain, path, name), _size = shard.order.popitem(last=False)
            shard.jar.clear(domain, path, name)
            self.refused += 1

    def __len__(self) -> int:
        return sum(len(shard.jar) for shard in self._shards.values())

    def sites(self) -> list[str]:
        """The registrable domains holding cookies."""
        return sorted(self._shards)

    def save(self, path: Path) -> None:
        """Write every cookie (session ones too: a resumed crawl is the same session) to ``path``, atomically."""
        cookies = [cookie for shard in self._shards.values() for cookie in shard.jar]
        temp = path.with_name(path.name + ".tmp")
        try:
            temp.write_bytes(encode_cookies(cookies))
            os.replace(temp, path)
        except OSError as exc:
            raise WriteFailed(f"cannot write {path}: {exc.strerror or exc}") from None

    def load(self, path: Path) -> int:
        """Add the cookies :meth:`save` wrote to ``path`` (none if it is absent); how many. A file that is
        not one is logged and left out: a crawl goes on without its cookies rather than not at all."""
        try:
            cookies = decode_cookies(path.read_bytes())
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            log.warning("cookies in %s not read (%s): the crawl goes on without them", path, exc)
            return 0
        for cookie in cookies:
            self._put(cookie)
        return len(cookies)

    # -- a host's cookies moving with its bucket ---------------------------------------------
    def of_host(self, host: str) -> list[Cookie]:
        """The cookies a request to ``host`` (a host key: ``name[:port]``) may carry: its host-only
        ones and the ``Domain`` ones that domain-match it, whatever their path."""
        if not self._shards:
            return []
        name = _hostname("http://" + host + "/").lower()
        labels = name.split(".") if name else []
        suffixes = [".".join(labels[k:]) for k in range(len(labels))]  # the host and each domain above it
        found: list[Cookie] = []
        for site in suffixes:  # its registrable domain is one of them (a dict lookup each: site_of costs 20 us)
            shard = self._shards.get(site)
            if shard is None:
                continue
            by_domain = shard.jar._cookies  # type: ignore[attr-defined]  # iterating a jar costs 30 us a cookie
            for domain in (d for suffix in suffixes for d in (suffix, "." + suffix)):
                for by_path in by_domain.get(domain, {}).values():
                    found += [cookie for cookie in by_path.values() if _serves(cookie, name)]
        return found

    def install(self, cookies: list[Cookie]) -> int:
        """Add cookies another node kept (a handed-over host's), replacing those of the same domain, path
        and name, within the shard's limits; expired ones are left out. Returns how many were added."""
        now = int(time.time())
        added = 0
        for cookie in cookies:
            if cookie.is_expired(now) or len(cookie.name) + len(cookie.value or "") > MAX_COOKIE_BYTES:
                continue
            self._trim(self._put(cookie))
            added += 1
        return added

    def forget_host(self, host: str) -> int:
        """Drop ``host``'s host-only cookies (its bucket went to another node); how many."""
        if not self._shards:
            return 0
        name = _hostname("http://" + host + "/")
        site = site_of(name)
        shard = self._shards.get(site)
        if shard is None or not name:
            return 0
        gone = [c for c in shard.jar if not c.domain_specified and c.domain.lstrip(".").lower() == name]
        for cookie in gone:
            shard.jar.clear(cookie.domain, cookie.path, cookie.name)
            shard.order.pop((cookie.domain, cookie.path, cookie.name), None)
        if not shard.order:
            del self._shards[site]
        return len(gone)

    def _put(self, cookie: Cookie) -> _Shard:
        site = site_of(cookie.domain.lstrip("."))
        shard = self._shards.get(site) or self._shards.setdefault(site, _Shard(self._policy))
        shard.jar.set_cookie(cookie)
        key = (cookie.domain, cookie.path, cookie.name)
        shard.order.pop(key, None)  # set again: the most recent now
        shard.order[key] = len(cookie.name) + len(cookie.value or "")
        return shard


def _serves(cookie: Cookie, hostname: str) -> bool:
    domain = cookie.domain.lstrip(".").lower()
    return domain == hostname or (bool(cookie.domain_specified) and hostname.endswith("." + domain))


def encode_cookies(cookies: list[Cookie]) -> bytes:
    """Cookies as plain data (JSON: one row of :class:`http.cookiejar.Cookie`'s arguments each)."""
    rows = [[_fields_of(cookie)[name] for name in _FIELDS] for cookie in cookies]
    return json.dumps({"cookies": rows}, separators=(",", ":")).encode("utf-8")


def decode_cookies(data: bytes) -> list[Cookie]:
    """The cookies :func:`encode_cookies` wrote; ValueError if ``data`` is not that, value by value."""
    try:
        rows = json.loads(data.decode("utf-8"))["cookies"]
    except (UnicodeDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"not a cookie list: {exc}") from None
    if not isinstance(rows, list):
        raise ValueError("not a cookie list")
    return [_cookie(row) for row in rows]


def _cookie(row: object) -> Cookie:
    if not isinstance(row, list) or len(row) != len(_FIELDS):
        raise ValueError(f"a cookie must be a list of {len(_FIELDS)} values")
    values = dict(zip(_FIELDS, row, strict=True))
    for name, kinds in _KINDS.items():
        if not isinstance(values[name], kinds) or (isinstance(values[name], bool) and bool not in kinds):
            raise ValueError(f"a cookie's {name} is {type(values[name]).__name__}")
    rest = values["rest"]
    if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in rest.items()):
        raise ValueError("a cookie's rest must map names to strings")
    if not values["name"] or not values["domain"] or not values["path"]:
        raise ValueError("a cookie needs a name, a domain and a path")
    return Cookie(**values)


_FIELDS = ("version", "name", "value", "port", "port_specified", "domain", "domain_specified", "domain_initial_dot",
           "path", "path_specified", "secure", "expires", "discard", "comment", "comment_url", "rest")
""":class:`http.cookiejar.Cookie`'s constructor arguments (``rest`` is its ``_rest``)."""
_OPT_STR = (str, type(None))
_KINDS: dict[str, tuple[type, ...]] = {
    "version": (int, type(None)), "name": (str,), "value": _OPT_STR, "port": _OPT_STR, "port_specified": (bool,),
    "domain": (str,), "domain_specified": (bool,), "domain_initial_dot": (bool,), "path": (str,),
    "path_specified": (bool,), "secure": (bool,), "expires": (int, float, type(None)), "discard": (bool,),
    "comment": _OPT_STR, "comment_url": _OPT_STR, "rest": (dict,),
}
"""The type each field may have (a bool is an int to ``isinstance``: only where bool is listed)."""


def _fields_of(cookie: Cookie) -> dict[str, Any]:
    values = {name: getattr(cookie, name) for name in _FIELDS if name != "rest"}
    values["rest"] = dict(cookie._rest)  # type: ignore[attr-defined]
    return values


def _hostname(url: str) -> str:
    try:
        return hostname(url)
    except ValueError:
        return ""


def _find(jar: CookieJar, key: tuple[str, str, str]) -> Cookie | None:
    domain, path, name = key
    try:
        found: Cookie = jar._cookies[domain][path][name]  # type: ignore[attr-defined]
    except KeyError:
        return None
    return found


class HttpPort(Protocol):
    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult: ...


class CookieHttp:
    """The node's HTTP client with the crawl's cookie jar (module docstring)."""

    def __init__(self, http: HttpPort, jar: CrawlCookies) -> None:
        self.http = http
        self.jar = jar

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        cookie = None if headers and any(k.lower() == "cookie" for k in headers) else self.jar.header(url)
        if cookie is not None:
            headers = {**(headers or {}), "Cookie": cookie}
        result = await (self.http.fetch(url) if headers is None else self.http.fetch(url, headers=headers))
        if result.status is not None:
            self.jar.store(url, result.response_headers)
        return result
