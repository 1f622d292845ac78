"""webgather.scope.Scope: every reject reason, every host mode, and the order of checks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from webgather.config import ScopeConfig
from webgather.scope import Scope

SEEDS = ["http://ex.com/", "https://blog.ex.org:8443/start"]


def scope(**kwargs: object) -> Scope:
    return Scope(ScopeConfig(**kwargs), SEEDS)  # type: ignore[arg-type]


def test_in_scope_is_none() -> None:
    s = scope()
    assert s.reject("http://ex.com/a/b?c=d", 0) is None
    assert s.reject("https://ex.com/x", 5) is None  # http and https on their default ports: one site
    assert s.reject("http://blog.ex.org:8443/", 1) is None
    assert s.reject("https://ex.com:8080/x", 5) == "off_scope"  # another port is another service
    assert s.reject("http://blog.ex.org/", 1) == "off_scope"


def test_url_too_long() -> None:
    s = scope(max_url_length=40)
    base = "http://ex.com/"
    assert s.reject(base + "a" * (40 - len(base)), 0) is None
    assert s.reject(base + "a" * (41 - len(base)), 0) == "url_too_long"


def test_too_deep() -> None:
    s = scope(max_depth=2)
    assert s.reject("http://ex.com/a", 2) is None
    assert s.reject("http://ex.com/a", 3) == "too_deep"
    assert scope(max_depth=None).reject("http://ex.com/a", 10_000) is None


def test_seed_hosts_mode_off_scope() -> None:
    s = scope(mode="seed-hosts")
    assert s.reject("http://other.example/", 0) == "off_scope"
    assert s.reject("http://www.ex.com/", 0) == "off_scope"  # subdomains are other hosts
    assert s.reject("http://ex.org/", 0) == "off_scope"


def test_add_seed_hosts() -> None:
    s = scope()
    assert s.reject("http://late.example/", 0) == "off_scope"
    s.add_seed_hosts(["http://late.example/seed"])
    assert s.reject("http://late.example/", 0) is None
    assert s.reject("http://ex.com/", 0) is None


def test_domains_mode() -> None:
    s = scope(mode="domains", domains=("Example.COM.", "net.test"))
    assert s.reject("http://example.com/", 0) is None
    assert s.reject("http://a.b.example.com/", 0) is None
    assert s.reject("http://notexample.com/", 0) == "off_scope"
    assert s.reject("http://example.com.evil.test/", 0) == "off_scope"
    assert s.reject("http://ex.com/", 0) == "off_scope"  # seeds do not count in this mode
    assert s.reject("http://x.net.test:81/", 0) is None


def test_domains_mode_with_a_unicode_domain() -> None:
    # Canonical URLs spell hosts in IDNA; a configured Unicode domain must match them.
    s = scope(mode="domains", domains=("Bücher.de",))
    assert s.reject("http://xn--bcher-kva.de/", 0) is None
    assert s.reject("http://shop.xn--bcher-kva.de/", 0) is None
    assert s.reject("http://bucher.de/", 0) == "off_scope"


def test_any_mode() -> None:
    s = scope(mode="any")
    assert s.reject("http://anything.example/", 0) is None
    assert s.reject("http://[::1]:8080/", 0) is None


def test_trap_repeated_segments() -> None:
    s = scope(max_repeated_segments=3)
    assert s.reject("http://ex.com/a/a/a", 0) is None
    assert s.reject("http://ex.com/a/a/a/a", 0) == "trap"
    assert s.reject("http://ex.com/a/b/a/b/a/b/a", 0) == "trap"  # not necessarily adjacent
    assert s.reject("http://ex.com/a/b/c/d/e/f/g/h", 0) is None  # deep but no repeats
    assert s.reject("http://ex.com/x?p=a/a/a/a/a", 0) is None  # the query does not count
    assert s.reject("http://ex.com//////", 0) is None  # empty segments do not count


def test_checks_run_in_a_fixed_order() -> None:
    s = scope(max_url_length=30, max_depth=1, max_repeated_segments=1)
    long_deep_offscope_trap = "http://other.example/t/t/t/t/t/t"
    assert s.reject(long_deep_offscope_trap, 5) == "url_too_long"
    s2 = scope(max_depth=1, max_repeated_segments=1)
    assert s2.reject("http://other.example/t/t", 5) == "too_deep"
    assert s2.reject("http://other.example/t/t", 1) == "off_scope"
    assert s2.reject("http://ex.com/t/t", 1) == "trap"


@settings(max_examples=200, deadline=None)
@given(
    segments=st.lists(st.sampled_from(["a", "b", "c", "", "a%2F"]), max_size=12),
    depth=st.integers(0, 20),
    limit=st.integers(1, 4),
)
def test_decision_depends_only_on_the_url_and_depth(segments: list[str], depth: int, limit: int) -> None:
    url = "http://ex.com/" + "/".join(segments)
    s = scope(max_repeated_segments=limit, max_depth=10)
    reason = s.reject(url, depth)
    assert reason == s.reject(url, depth)  # deterministic, no hidden state
    counts = [segments.count(x) for x in set(segments) if x]
    expected_trap = bool(counts) and max(counts) > limit
    if depth > 10:
        assert reason == "too_deep"
    else:
        assert (reason == "trap") == expected_trap


def test_seed_hosts_key_on_host_and_port() -> None:
    s = Scope(ScopeConfig(mode="seed-hosts"), ["http://intranet.test:8080/"])
    assert s.reject("http://intranet.test:8080/x", 1) is None
    assert s.reject("http://intranet.test:6379/", 1) == "off_scope"
    assert s.reject("http://intranet.test/", 1) == "off_scope"
    web = Scope(ScopeConfig(mode="seed-hosts"), ["http://a.test:80/"])  # default ports: one site
    assert web.reject("http://a.test/", 1) is None and web.reject("https://a.test/", 1) is None
    assert web.reject("http://a.test:443/", 1) is None and web.reject("http://a.test:8443/", 1) == "off_scope"
    v6 = Scope(ScopeConfig(mode="seed-hosts"), ["http://[2001:db8::1]:8080/"])
    assert v6.reject("http://[2001:db8::1]:8080/a", 1) is None
    assert v6.reject("http://[2001:db8::1]:9090/a", 1) == "off_scope"


def test_a_requisite_is_held_to_exclude_rules_but_not_include_rules() -> None:
    s = scope(include=("/docs/",), exclude=(r"\.woff2$",), include_surt=("com,ex)/docs",))
    assert s.reject("http://ex.com/static/site.css", 0) == "excluded"  # a page outside the includes
    assert s.reject_requisite("http://ex.com/static/site.css") is None  # its stylesheet is fetched
    assert s.reject_requisite("http://cdn.ex.net/lib.js") is None  # as a CDN's is
    assert s.reject_requisite("http://ex.com/docs/font.woff2") == "excluded"
