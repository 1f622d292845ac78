"""Which proxy a URL goes through (webgather.fetch.proxy), and the proxy settings' parsing. Pure."""

from __future__ import annotations

import base64

import pytest

from webgather.config import FetchConfig, ProxyRule, load, to_toml
from webgather.config.proxyspec import Proxy, parse_proxy
from webgather.errors import ConfigError, ProxyAuthFailed, ProxyRefused
from webgather.fetch.proxy import ProxyRouter, bypasses, check_answer, connect_request, parse_no_proxy
from webgather.fetch.request import wire_target

HTTP_P = Proxy("127.9.9.1", 3128)
HTTPS_P = Proxy("127.9.9.2", 8080)


def route(router: ProxyRouter, url: str) -> Proxy | None:
    return router.route(wire_target(url))


def test_parse_proxy_urls() -> None:
    assert parse_proxy("http://127.0.0.1:3128", "x") == Proxy("127.0.0.1", 3128)
    assert parse_proxy("proxy.corp:8080", "x") == Proxy("proxy.corp", 8080)  # as environment variables hold it
    assert parse_proxy("http://[::1]:3128/", "x") == Proxy("::1", 3128)
    assert parse_proxy("http://Proxy.Corp", "x") == Proxy("proxy.corp", 80)
    assert parse_proxy("DIRECT", "x") is None
    with_auth = parse_proxy("http://us%40er:p%3Ass@h:1", "x")
    assert with_auth is not None and (with_auth.user, with_auth.password) == ("us@er", "p:ss")
    assert with_auth.authorization == "Basic " + base64.b64encode(b"us@er:p:ss").decode()
    assert Proxy("h", 1).authorization is None
    assert "p:ss" not in repr(with_auth) and with_auth.shown == "http://h:1"


@pytest.mark.parametrize("bad", ["socks5://h:1080", "https://h:443", "http://h:x", "http://h:1/path", "http://:3128"])
def test_unusable_proxies_are_config_errors_without_the_password(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(None, {}, {"fetch.proxy": bad.replace("//", "//u:hunter2@", 1)})
    assert "hunter2" not in str(info.value) and "fetch.proxy" in str(info.value)


def test_proxy_rules_from_toml_environment_and_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    toml = tmp_path / "c.toml"
    toml.write_text('[fetch]\nproxy_rules = [{pattern = "*.corp", proxy = "direct"}, '
                    '{pattern = "*", proxy = "http://127.0.0.1:3128"}]\n')
    rules = (ProxyRule("*.corp", "direct"), ProxyRule("*", "http://127.0.0.1:3128"))
    assert load(toml, {}).fetch.proxy_rules == rules
    env = {"WEBGATHER_FETCH__PROXY_RULES": "*.corp direct, * http://127.0.0.1:3128"}
    config = load(None, env)
    assert config.fetch.proxy_rules == rules
    again = tmp_path / "again.toml"
    again.write_text(to_toml(config))
    assert load(again, {}).fetch == config.fetch
    for bad in ('[{pattern = "*"}]', '[{pattern = "a b", proxy = "direct"}]', '["only-one-word"]',
                '[{pattern = "*", proxy = "ftp://x"}]', '[{pattern = "*", proxy = "direct", extra = "x"}]'):
        toml.write_text(f"[fetch]\nproxy_rules = {bad}\n")
        with pytest.raises(ConfigError, match="fetch.proxy_rules"):
            load(toml, {})


def test_precedence_rules_then_proxy_then_environment() -> None:
    env = {"http_proxy": "http://127.9.9.1:3128", "HTTPS_PROXY": "127.9.9.2:8080"}
    from_env = ProxyRouter.from_config(FetchConfig(), env)
    assert route(from_env, "http://a.example/") == HTTP_P
    assert route(from_env, "https://a.example/") == HTTPS_P
    assert route(ProxyRouter.from_config(FetchConfig(), {}), "http://a.example/") is None
    configured = FetchConfig(proxy="http://127.0.0.7:1", proxy_rules=(ProxyRule("*.intra", "direct"),
                                                                   ProxyRule("A?.example", "http://127.0.0.8:2")))
    router = ProxyRouter.from_config(configured, env)  # the config names proxies: the environment is not read
    assert route(router, "http://x.intra/") is None
    assert route(router, "https://ab.example/") == Proxy("127.0.0.8", 2)
    assert route(router, "https://abc.example/") == Proxy("127.0.0.7", 1)
    assert route(router, "http://intra/") == Proxy("127.0.0.7", 1)  # *.intra: subdomains only
    assert router.proxies == {Proxy("127.0.0.7", 1), Proxy("127.0.0.8", 2)}
    direct = ProxyRouter.from_config(FetchConfig(proxy="direct"), env)
    assert route(direct, "http://a.example/") is None and direct.proxies == frozenset()
    only_rules = ProxyRouter.from_config(FetchConfig(proxy_rules=(ProxyRule("a.example", "http://127.0.0.8:2"),)), env)
    assert route(only_rules, "http://b.example/") is None  # rules set: the environment is not read either


def test_environment_lower_case_first_and_httpoxy() -> None:
    both = {"http_proxy": "http://127.9.9.1:3128", "HTTP_PROXY": "http://127.0.0.1:1"}
    assert route(ProxyRouter.from_config(FetchConfig(), both), "http://a.example/") == HTTP_P
    cgi = {"HTTP_PROXY": "http://127.0.0.1:1", "REQUEST_METHOD": "GET"}  # a request's "Proxy:" header
    assert route(ProxyRouter.from_config(FetchConfig(), cgi), "http://a.example/") is None
    with pytest.raises(ConfigError, match="HTTPS_PROXY"):
        ProxyRouter.from_config(FetchConfig(), {"HTTPS_PROXY": "socks5://127.0.0.1:1080"})


def test_no_proxy_entries() -> None:
    entries = parse_no_proxy("localhost, .example.com *.test.org,127.0.0.0/16 ,[::1], other.net:8080, 127.168.1.5")
    yes = [("localhost", 80), ("example.com", 80), ("www.example.com", 443), ("a.test.org", 80),
           ("test.org", 80), ("127.0.2.3", 80), ("::1", 80), ("other.net", 8080), ("127.168.1.5", 80)]
    no = [("notexample.com", 80), ("example.com.evil", 80), ("127.1.2.3", 80), ("other.net", 80), ("::2", 80)]
    assert all(bypasses(entries, h, p) for h, p in yes)
    assert not any(bypasses(entries, h, p) for h, p in no)
    assert bypasses(parse_no_proxy("*"), "anything.at.all", 1)
    assert not bypasses(parse_no_proxy(""), "a", 80)
    env = {"http_proxy": "http://127.9.9.1:3128", "NO_PROXY": "skip.example"}
    router = ProxyRouter.from_config(FetchConfig(), env)
    assert route(router, "http://www.skip.example/") is None
    assert route(router, "http://keep.example/") == HTTP_P
    lower = ProxyRouter.from_config(FetchConfig(), {**env, "no_proxy": "keep.example"})
    assert route(lower, "http://keep.example/") is None and route(lower, "http://skip.example/") == HTTP_P


def test_connect_request_and_answers() -> None:
    assert connect_request(wire_target("https://a.example/x"), Proxy("p", 1)) == (
        b"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n")
    secured = connect_request(wire_target("https://[::1]:8443/"), Proxy("p", 1, "u", "p"))
    assert secured.startswith(b"CONNECT [::1]:8443 HTTP/1.1\r\n") and b"Proxy-Authorization: Basic dTpw\r\n" in secured
    check_answer(200, "Connection established", HTTP_P)
    with pytest.raises(ProxyAuthFailed, match="407"):
        check_answer(407, "Proxy Authentication Required", HTTP_P)
    with pytest.raises(ProxyRefused, match="403 Forbidden"):
        check_answer(403, "Forbidden", HTTP_P)


def test_a_cluster_definition_carries_the_proxy_rules() -> None:
    from webgather.cluster.definition import CrawlDefinition

    config = load(None, {}, {"fetch.proxy": "http://127.0.0.1:3128",
                             "fetch.proxy_rules": ("*.corp direct", "*.onion http://127.0.0.1:8118")})
    stored = CrawlDefinition.from_text(CrawlDefinition.of(config, ["http://a.example/"], 0.0).to_text())
    node = stored.crawl_config(**{"fetch.proxy": "http://127.0.0.9:3128"})  # node --proxy: its own
    assert node.fetch.proxy_rules == config.fetch.proxy_rules
    assert (stored.crawl_config().fetch.proxy, node.fetch.proxy) == ("http://127.0.0.1:3128", "http://127.0.0.9:3128")
