"""webgather.fetch.cookies: the crawl's cookie jar follows RFC 6265 and its limits."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webgather.fetch.cookies import CookieHttp, CrawlCookies, site_of
from webgather.fetch.model import FetchResult


def _set(jar: CrawlCookies, url: str, *cookies: str) -> None:
    jar.store(url, tuple(("Set-Cookie", c) for c in cookies))


def test_host_only_cookies_stay_on_their_host_and_domain_cookies_reach_subdomains() -> None:
    jar = CrawlCookies()
    _set(jar, "http://www.ex.com/", "host=1; Path=/", "dom=2; Domain=ex.com; Path=/")
    assert jar.header("http://www.ex.com/a") == "host=1; dom=2"
    assert jar.header("http://shop.ex.com/") == "dom=2"
    assert jar.header("http://ex.com/") == "dom=2"
    assert jar.header("http://other.org/") is None
    assert jar.sites() == ["ex.com"]


def test_a_domain_the_host_does_not_match_or_a_public_suffix_is_refused() -> None:
    jar = CrawlCookies()
    _set(jar, "http://www.ex.co.uk/", "a=1; Domain=co.uk", "b=2; Domain=other.co.uk", "c=3; Domain=.ex.co.uk")
    assert jar.header("http://www.ex.co.uk/") == "c=3"
    assert jar.header("http://evil.co.uk/") is None
    _set(jar, "http://user.github.io/", "d=4; Domain=github.io")  # a private public suffix too
    assert jar.header("http://other.github.io/") is None


def test_path_secure_and_httponly() -> None:
    jar = CrawlCookies()
    _set(jar, "https://ex.com/shop/cart", "dflt=1", "root=2; Path=/", "acct=3; Path=/account",
         "sec=4; Path=/; Secure", "ho=5; Path=/; HttpOnly")
    assert jar.header("https://ex.com/shop/x") == "dflt=1; root=2; sec=4; ho=5"
    assert jar.header("https://ex.com/account/me") == "acct=3; root=2; sec=4; ho=5"
    assert jar.header("https://ex.com/accounting") == "root=2; sec=4; ho=5"
    assert jar.header("http://ex.com/account") == "acct=3; root=2; ho=5"  # Secure: https only


def test_expiry_max_age_and_deletion() -> None:
    jar = CrawlCookies()
    _set(jar, "http://ex.com/", "old=1; Path=/; Expires=Thu, 01 Jan 1970 00:00:01 GMT", "gone=2; Path=/; Max-Age=0",
         "keep=3; Path=/; Max-Age=3600", "s=4; Path=/")
    assert jar.header("http://ex.com/") == "keep=3; s=4"
    _set(jar, "http://ex.com/", "s=; Path=/; Max-Age=0")  # a site deletes its cookie
    assert jar.header("http://ex.com/") == "keep=3"
    _set(jar, "http://ex.com/", "keep=; Path=/; Expires=Thu, 01 Jan 1970 00:00:01 GMT")
    assert jar.header("http://ex.com/") is None and jar.sites() == [] and len(jar) == 0


def test_limits_per_host_evict_the_least_recently_set_and_a_huge_cookie_is_refused() -> None:
    jar = CrawlCookies(max_cookies_per_host=3, max_cookie_bytes_per_host=30)
    _set(jar, "http://ex.com/", "a=1; Path=/", "b=2; Path=/", "c=3; Path=/")
    _set(jar, "http://ex.com/", "a=9; Path=/", "d=4; Path=/")  # a set again: b is the oldest
    assert jar.header("http://ex.com/") == "a=9; c=3; d=4"
    _set(jar, "http://ex.com/", "big=" + "x" * 27 + "; Path=/")  # 30 bytes: the others go
    assert jar.header("http://ex.com/") == "big=" + "x" * 27
    _set(jar, "http://ex.com/", "huge=" + "y" * 5000 + "; Path=/")
    assert "huge" not in (jar.header("http://ex.com/") or "") and jar.refused >= 4


def test_sites_are_registrable_domains() -> None:
    assert site_of("www.Example.co.uk") == "example.co.uk"
    assert site_of("127.0.0.1") == "127.0.0.1" and site_of("[::1]") == "[::1]"
    assert site_of("a.b.test") == "b.test" and site_of("co.uk") == "co.uk"


class _Recorder:
    def __init__(self, set_cookie: str) -> None:
        self.sent: list[Mapping[str, str] | None] = []
        self.set_cookie = set_cookie

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None) -> FetchResult:
        self.sent.append(headers)
        return FetchResult(url=url, started_at=0.0, elapsed_s=0.0, status=200,
                           response_headers=(("Set-Cookie", self.set_cookie),), raw_body=b"", body=b"")


def test_cookie_http_sends_what_was_set_and_a_hooks_cookie_wins() -> None:
    inner = _Recorder("sid=abc; Path=/")
    http = CookieHttp(inner, CrawlCookies())

    async def run() -> None:
        await http.fetch("http://ex.com/")
        await http.fetch("http://ex.com/next", headers={"X-A": "1"})
        await http.fetch("http://ex.com/mine", headers={"cookie": "own=1"})

    asyncio.run(run())
    assert inner.sent == [None, {"X-A": "1", "Cookie": "sid=abc"}, {"cookie": "own=1"}]


def test_save_and_load_keep_every_rule_and_a_bad_file_is_left_out(tmp_path: Path, caplog: Any) -> None:
    jar = CrawlCookies()
    _set(jar, "https://www.ex.com/shop/", "host=1", "dom=2; Domain=ex.com; Path=/; Secure; HttpOnly",
         "later=3; Path=/; Max-Age=3600")
    path = tmp_path / "cookies.json"
    jar.save(path)
    again = CrawlCookies()
    assert again.load(path) == 3 and again.sites() == ["ex.com"]
    for url in ("https://www.ex.com/shop/x", "http://www.ex.com/shop/x", "https://shop.ex.com/", "https://www.ex.com/"):
        assert again.header(url) == jar.header(url), url
    assert again.load(tmp_path / "absent.json") == 0
    (tmp_path / "bad.json").write_text("{not json")
    assert again.load(tmp_path / "bad.json") == 0 and "not read" in caplog.text


_COUNT_BUILDS = textwrap.dedent("""
    import threading, time
    import publicsuffixlist

    builds = []
    real_init = publicsuffixlist.PublicSuffixList.__init__

    def counted(self, *args, **kwargs):
        builds.append(1)
        time.sleep(0.05)  # widen the window in which racing threads could each build one
        real_init(self, *args, **kwargs)

    publicsuffixlist.PublicSuffixList.__init__ = counted
    from webgather.fetch import cookies
    at_import = len(builds)
    empty = cookies.CrawlCookies()
    assert empty.header("http://www.site.co.uk/") is None and empty.forget_host("www.site.co.uk") == 0
    with_none_set = len(builds)
    hosts = [f"www.site{i}.co.uk" for i in range(8)]
    found = {}
    threads = [threading.Thread(target=lambda h=h: found.update({h: cookies.site_of(h)})) for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == {h: h[4:] for h in hosts}, found
    print(at_import, with_none_set, len(builds))
""")


def test_the_public_suffix_list_is_built_on_first_use_and_once_across_threads() -> None:
    """Building the list costs 40-50 ms of CPU: a process that imports the module (every worker's start)
    or asks an empty jar for a request's header does not pay it, and threads racing to the first lookup
    build it once."""
    out = subprocess.run([sys.executable, "-c", _COUNT_BUILDS], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["0", "0", "1"]
