"""[scope] include/exclude regexes, SURT prefixes and query-parameter stripping (webgather.scope_rules)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from webgather.cli import main
from webgather.cluster.definition import CrawlDefinition
from webgather.config import ScopeConfig, load, to_toml
from webgather.errors import ConfigError
from webgather.frontier.model import CrawlItem
from webgather.runtime.engine.pipeline import make_items
from webgather.scope import Scope
from webgather.scope_rules import UrlRules
from webgather.surtkey import surt, surt_prefix
from webgather.urls import canonicalize, fingerprint


def scope(**kwargs: object) -> Scope:
    return Scope(ScopeConfig(mode="any", **kwargs))  # type: ignore[arg-type]


def test_exclude_regex_is_searched_and_wins_over_include() -> None:
    s = scope(include=(r"example\.com/shop/",), exclude=(r"\.pdf$", r"(?i)/PRIVATE/"))
    assert s.reject("http://example.com/shop/a", 0) is None
    assert s.reject("http://example.com/blog/a", 0) == "excluded"  # include given: must match
    assert s.reject("http://example.com/shop/a.pdf", 0) == "excluded"
    assert s.reject("http://example.com/shop/private/x", 0) == "excluded"  # inline flags stay per regex


def test_no_rules_exclude_nothing_and_host_mode_comes_first() -> None:
    assert scope().reject("http://anything.test/x?y=1", 0) is None
    s = Scope(ScopeConfig(exclude=("never-matches",)), ["http://ex.com/"])
    assert s.reject("http://other.test/never-matches", 0) == "off_scope"


def test_include_regexes_and_surt_prefixes_are_one_list_of_alternatives() -> None:
    s = scope(include=(r"/docs/",), include_surt=("http://(org,example,",))
    assert s.reject("http://a.test/docs/1", 0) is None
    assert s.reject("http://sub.example.org/x", 0) is None
    assert s.reject("http://a.test/x", 0) == "excluded"


@pytest.mark.parametrize(("prefix", "inside", "outside"), [
    # Heritrix, closed host: that host (www or not, http or https) under /shop/, and /shop itself
    ("http://(com,example,)/shop/", ["http://example.com/shop/", "https://www.example.com/shop/a?b=1",
                                     "http://example.com/Shop/x", "http://example.com/shop"],
     ["http://example.com/shopping", "http://sub.example.com/shop/", "http://example.com:8080/shop/"]),
    # Heritrix, open after a comma: the domain, its subdomains, any port; not a longer label
    ("http://(com,example,", ["http://example.com/", "http://a.b.example.com/x", "http://example.com:8080/"],
     ["http://example.community/", "http://notexample.com/", "http://example.org/"]),
    # Heritrix with a port
    ("http://(com,example,:8080)/", ["http://example.com:8080/a"], ["http://example.com/a"]),
    # pywb's key, as webgather's CDXJ writes it
    ("com,example)/shop", ["http://example.com/shop", "http://example.com/shopping"], ["http://example.com/blog"]),
    # a plain URL: its own key (the trailing slash keeps /shopping out)
    ("http://www.example.com/shop/", ["http://example.com/shop/a"], ["http://example.com/shopping"]),
])
def test_surt_prefix_forms(prefix: str, inside: list[str], outside: list[str]) -> None:
    s = scope(include_surt=(prefix,))
    assert [u for u in inside if s.reject(u, 0) is not None] == []
    assert [u for u in outside if s.reject(u, 0) != "excluded"] == []
    x = scope(exclude_surt=(prefix,))
    assert [u for u in inside if x.reject(u, 0) != "excluded"] == []


def test_the_key_webgather_writes_for_a_url_is_a_prefix_of_itself() -> None:
    for url in ["http://www.Example.com:8080/A/b?z=1&a=2", "https://example.com/", "http://127.0.0.1/x"]:
        assert re.match(surt_prefix(surt(url)), surt(url))
        assert scope(include_surt=(surt(url),)).reject(url, 0) is None


@pytest.mark.parametrize("bad", ["", "   ", "http://(com,example :80", "http://(com,example,/shop"])
def test_bad_surt_prefixes_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        surt_prefix(bad)


def test_strip_query_params_by_name_and_glob_case_insensitively() -> None:
    rules = UrlRules.of(strip_query_params=("SessionId", "utm_*", "s?d"))
    assert rules.clean("http://a.test/p?b=2&sessionid=9&utm_source=x&UTM_Medium=y&c") == "http://a.test/p?b=2&c"
    assert rules.clean("http://a.test/p?SID=1") == "http://a.test/p"  # an emptied query loses its "?"
    assert rules.clean("http://a.test/p?sessionidx=1&xsid=2") == "http://a.test/p?sessionidx=1&xsid=2"
    url = "http://a.test/p?keep=1"
    assert rules.clean(url) is url and UrlRules.of().clean(url) is url


def test_two_session_ids_are_one_item_with_the_fingerprint_of_the_clean_url() -> None:
    s = scope(strip_query_params=("sid",))
    urls = ["http://a.test/p?sid=1&x=2", "http://a.test/p?sid=2&x=2"]
    items = make_items([CrawlItem(u, fingerprint(u), depth=1) for u in urls], s)
    assert {(i.url, i.fp) for i in items} == {("http://a.test/p?x=2", fingerprint("http://a.test/p?x=2"))}


def test_rules_come_from_toml_env_and_flags(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('[scope]\nexclude = ["\\\\d{1,3}$"]\nstrip_query_params = ["sid"]\n')
    env = {"WEBGATHER_SCOPE__INCLUDE_SURT": "http://(com,example,)/\ncom,foo)/a,b"}
    config = load(toml, env, {"scope.include": ("a{1,2}",)})
    assert config.scope.exclude == (r"\d{1,3}$",)  # commas belong to the regex
    assert config.scope.include_surt == ("http://(com,example,)/", "com,foo)/a,b")
    assert config.scope.include == ("a{1,2}",) and config.scope.strip_query_params == ("sid",)
    assert load(None, {"WEBGATHER_SCOPE__STRIP_QUERY_PARAMS": "sid, utm_*"}).scope.strip_query_params == ("sid", "utm_*")
    assert load(_write(tmp_path / "again.toml", to_toml(config)), {}) == config


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_bad_regex_is_a_config_error_naming_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"^scope\.exclude: '\(' is not a valid regular expression"):
        load(None, {}, {"scope.exclude": ("(",)})
    with pytest.raises(ConfigError, match=r"^scope\.include_surt: "):
        load(None, {}, {"scope.include_surt": ("http://(com,a :1",)})


@pytest.mark.parametrize(("argv", "needle"), [
    (["--exclude", "[a-"], "scope.exclude: '[a-' is not a valid regular expression"),
    (["--include", "ok", "--include", "*x"], "scope.include: '*x' is not a valid regular expression"),
    (["--include-surt", "http://(com,x,/a"], "scope.include_surt:"),
])
def test_bad_flags_are_one_line_errors_naming_the_flag(argv: list[str], needle: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "(set by --" in err, err


def test_the_rules_are_part_of_a_cluster_crawls_definition() -> None:
    base = load(None, {})
    stripped = load(None, {}, {"scope.strip_query_params": ("sid",), "scope.exclude": ("x",)})
    a, b = CrawlDefinition.of(base, ["http://a.test/"], 0.0), CrawlDefinition.of(stripped, ["http://a.test/"], 0.0)
    assert a.differences(b) == ["scope.exclude", "scope.strip_query_params"]
    assert CrawlDefinition.from_text(b.to_text()).crawl_config().scope == stripped.scope


def test_surt_command_prints_a_key_that_include_surt_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    url = "http://www.Example.com:8080/Shop/?b=1&a=2"
    assert main(["surt", url, "https://example.com/"]) == 0
    keys = capsys.readouterr().out.splitlines()
    assert keys == ["com,example:8080)/shop?a=2&b=1", "com,example)/"]
    assert scope(include_surt=(keys[0],)).reject("http://example.com:8080/shop/?a=2&b=1", 0) is None
    assert main(["surt", "ftp://example.com/"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_surt_prefix_with_a_query_compares_the_sorted_query() -> None:
    s = scope(include_surt=("com,example)/list?a=1",))
    assert s.reject("http://example.com/list?b=2&a=1", 0) is None
    assert s.reject("http://example.com/list?a=2", 0) == "excluded"
    q = scope(include_surt=("com,example)/list",))  # no "?": the query is not looked at, same verdicts
    assert [q.reject(u, 0) for u in ("http://example.com/list?z=1", "http://example.com/li?st")] == [None, "excluded"]


_SEGMENT = st.text(alphabet="abAB09-._~%/", min_size=0, max_size=8)


@settings(max_examples=300, deadline=None)
@given(host=st.sampled_from(["example.com", "www.example.com", "a.b.example.org", "127.0.0.1"]),
       path=_SEGMENT, query=st.text(alphabet="ab=&?/%2F", max_size=10), cut=st.integers(0, 40))
def test_keys_cut_at_the_query_give_the_same_verdicts_for_prefixes_without_one(host: str, path: str, query: str,
                                                                              cut: int) -> None:
    url = canonicalize(f"http://{host}/{path}?{query}")
    assume(url is not None)
    assert url is not None
    key = surt(url)
    prefix = key[:cut].partition("?")[0]
    assume(prefix.strip() != "")
    s = scope(include_surt=(prefix,))
    assert (s.reject(url, 0) is None) == bool(re.match(surt_prefix(prefix), key))


def test_memory_sizes_alone_do_not_make_a_resumed_crawl_incompatible() -> None:
    # a release that lowered the queue_memory_items default refused every crawl started before it
    before = load(None, {}, {"frontier.queue_memory_items": 1_000_000, "frontier.seen_memory_entries": 8})
    now = load(None, {}, {"frontier.order": "opic"})
    a, b = CrawlDefinition.of(before, ["http://a.test/"], 0.0), CrawlDefinition.of(now, ["http://a.test/"], 0.0)
    assert a.differences(b) == ["frontier.order"]
