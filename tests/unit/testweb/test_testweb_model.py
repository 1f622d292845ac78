"""The model: determinism, hosts and addresses, URL scheme, hrefs, lazy page == vectorized graph."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from webgather.errors import ConfigError
from webgather.testweb import WebModel, WebParams
from webgather.testweb.paths import Target, content_index, content_path, parse_path
from webgather.testweb.rand import derive, derive_arr, unit, unit_arr
from webgather.urls import canonicalize, hostname, resolve_link

PARAMS = WebParams.for_tests(seed=11, port=8080)
MODEL = WebModel(PARAMS)


def links_in(url: str, body: bytes) -> list[str]:
    """A plain extraction honouring <base>, rel=nofollow and meta robots nofollow."""
    tree = LexborHTMLParser(body.decode("utf-8", "replace"))
    for meta in tree.css("meta[name]"):
        if "nofollow" in (meta.attributes.get("content") or "").lower():
            return []
    base_node = tree.css_first("base[href]")
    base = resolve_link(url, base_node.attributes.get("href") or "") if base_node is not None else url
    out = []
    for node in tree.css("a[href], area[href], link[href], iframe[src]"):
        if "nofollow" in (node.attributes.get("rel") or "").lower().split():
            continue
        href = node.attributes.get("src" if node.tag == "iframe" else "href") or ""
        target = resolve_link(base or url, href)
        assert target is not None, href
        out.append(target)
    return out


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    again = WebModel(WebParams.for_tests(seed=11, port=8080))
    other = WebModel(WebParams.for_tests(seed=12, port=8080))
    urls = MODEL.content_urls()[:40] + MODEL.fixture_urls(0)
    for url in urls:
        first, second = MODEL.page(url, 5e8), again.page(url, 5e8)
        assert (first.status, first.headers, first.body) == (second.status, second.headers, second.body)
    assert any(MODEL.page(u).body != other.page(u).body for u in urls[:10])
    assert np.array_equal(MODEL.link_graph().dst, again.link_graph().dst)


def test_hosts_share_loopback_addresses_and_resolve_lines() -> None:
    params = WebParams(seed=1, n_hosts=600, mean_pages_per_host=3, hosts_per_ip=4)
    model = WebModel(params)
    assert model.host_names[0] == "h0001.web.test" and model.host_names[-1] == "h0600.web.test"
    addresses = model.addresses()
    assert len(addresses) == 150
    assert all(a.startswith("127.") and a != "127.0.0.1" for a in addresses)
    assert Counter(model.hosts.addresses).most_common(1)[0][1] == 4
    assert len(set(addresses)) == len(addresses)
    lines = model.resolve_lines()
    assert lines[0] == f"h0001.web.test {addresses[0]}" and len(lines) == 600
    assert model.n_pages == 1800 and int(model.hosts.pages.min()) >= 1


def test_url_scheme_round_trips() -> None:
    for i in range(300):
        path = content_path(i)
        assert content_index(path) == i
        assert canonicalize("http://h0001.web.test" + path) == "http://h0001.web.test" + path
        assert parse_path(path, 0, 40) == Target("content", i)
    for bad in ("/p/3", "/p/05", "/list?page=4&sort=new", "/a/b/p6.html", "/p/", "/nope", "/p/1?x"):
        assert content_index(bad) is None


def test_answers_for_bad_input() -> None:
    assert MODEL.page("not a url").status == 400
    assert MODEL.page("http://elsewhere.test/").status == 421
    assert MODEL.page(MODEL.url(0, "/p/99999")).status == 404
    assert MODEL.page(MODEL.url(0, "/f/404/999")).status == 404
    assert MODEL.page(MODEL.url(0, "/cal/0/next/prev")).status == 404
    with pytest.raises(ConfigError):
        MODEL.url("nowhere.test")
    with pytest.raises(ConfigError):
        WebParams(n_hosts=0)
    with pytest.raises(ConfigError):
        WebParams(robots_mix=(("sometimes", 1.0),))


def test_every_href_resolves_to_the_ground_truth() -> None:
    syntaxes: Counter[str] = Counter()
    for url in MODEL.content_urls():
        response = MODEL.page(url)
        assert Counter(links_in(url, response.body)) == Counter(response.follow_links), url
        assert all(canonicalize(link) == link for link in response.follow_links)
        text = response.body.decode("utf-8", "replace")
        for marker in ("<base ", "rel=\"nofollow\"", "<area ", "<iframe ", "<link rel=", "../", "#s", "HTTP://", "//h0", "%3", "&amp;", "href=\"\"", "href=\"#top\""):
            syntaxes[marker] += marker in text
        syntaxes["?query"] += "href=\"?page" in text or "href='?page" in text
    assert all(count > 0 for count in syntaxes.values()), syntaxes


def test_page_equals_link_graph_and_degrees_are_lazy() -> None:
    graph = MODEL.link_graph()
    assert graph.urls is not None and graph.n_pages == MODEL.n_pages
    for page in range(0, graph.n_pages, 7):
        url = graph.urls[page]
        expected = [graph.urls[d] for d in graph.dst[graph.src == page]]
        follow = MODEL.page(url).follow_links
        assert list(follow[: len(expected)]) == expected
        if not url.endswith(":8080/"):
            assert len(follow) == len(expected)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(0, 2**40))
def test_scalar_and_vector_draws_agree(key: int, salt: int) -> None:
    vector = derive_arr(np.array([key], dtype=np.uint64), np.array([salt], dtype=np.uint64))
    assert int(vector[0]) == derive(key, salt)
    assert float(unit_arr(vector)[0]) == unit(derive(key, salt))


def test_ports_come_from_the_url() -> None:
    plain = MODEL.page("http://h0001.web.test/")
    assert all(hostname(u).endswith("web.test") and ":8080" not in u for u in plain.follow_links)
    other = MODEL.page("http://h0001.web.test:9999/")
    assert all(":9999/" in u for u in other.follow_links)
