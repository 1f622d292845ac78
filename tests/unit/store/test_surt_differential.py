"""store.cdxj.surt against the ``surt`` package, the key pywb computes to look a URL up (``surt.surt(url)``).

pywb binary-searches a CDXJ index by that key: an index line written under
any other key is never found. Generated URLs mix what canonicalization must
fold: case, ``www``/``wwwN``, default and zero-padded ports, IPv4 in legacy
forms, IPv6, IDNs, user info, percent-escapes (double ones too), dot and empty
segments, trailing slashes, unsorted and empty query arguments, session ids,
fragments; each is compared raw and in the crawler's canonical form
(:func:`webgather.urls.canonicalize`), which is what the archive indexes.
``WEBGATHER_FUZZ_EXAMPLES=5000`` runs more.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webgather.store.cdxj import surt
from webgather.urls import canonicalize

oracle = pytest.importorskip("surt", reason="the surt package (test extra) is the oracle").surt

EXAMPLES = int(os.environ.get("WEBGATHER_FUZZ_EXAMPLES", "300"))
_SESSION = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"  # 32 characters: a jsessionid/phpsessid/sid value

labels = st.sampled_from(["a", "Example", "www", "www2", "WWW", "sub", "b-c", "xn--bcher-kva", "bücher", "ex%41mple", "h0001"])
hosts = st.one_of(
    st.lists(labels, min_size=1, max_size=4).map(".".join).map(lambda h: h + ".com"),
    st.sampled_from(["127.0.0.1", "10.1.2.3", "2130706433", "0177.0.0.1", "127.1", "[::1]", "[2001:db8::A]", "web.test."]),
)
ports = st.sampled_from(["", ":80", ":443", ":8080", ":0080", ":42353", ":"])
segments = st.sampled_from(
    ["a", "B", "p5.html", "%7Euser", "%2F", "%41", "%2541", "%25", ".", "..", "", "Ä", "a%20b", ";x=1", "x.aspx",
     "(S(abcdefghijklmnopqrstuvwx))", "%C3%A9", "~t", "a+b", "$!*'(),"]
)
paths = st.lists(segments, max_size=5).map(lambda s: "/" + "/".join(s)) | st.just("")
args = st.tuples(
    st.sampled_from(["a", "B", "b", "sort", "page", "jsessionid", "PHPSESSID", "x%26y", "é"]),
    st.sampled_from(["", "=", "=1", "=X", "=new", f"={_SESSION}", "=%26", "=a%3Db"]),
).map("".join)
queries = st.one_of(st.just(""), st.just("?"), st.lists(args, min_size=1, max_size=4).map(lambda a: "?" + "&".join(a)))
urls = st.builds(
    lambda scheme, user, host, port, path, query, frag: f"{scheme}://{user}{host}{port}{path}{query}{frag}",
    st.sampled_from(["http", "https", "HTTP"]), st.sampled_from(["", "user:pw@", "u@"]), hosts, ports, paths, queries,
    st.sampled_from(["", "#frag", "#a?b"]),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(urls)
def test_surt_is_the_key_pywb_looks_up(url: str) -> None:
    assert surt(url) == oracle(url), url
    canonical = canonicalize(url)
    if canonical is not None:
        assert surt(canonical) == oracle(canonical), canonical


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/list?sort=new&page=3",  # arguments sorted
        "http://example.com/a/b/",  # trailing slash dropped
        "http://127.0.0.1:8000/p",  # an IP address reversed like a name
        "http://example.com/%7Euser",  # unreserved escapes decoded
        "http://example.com/?",  # an empty query dropped
    ],
)
def test_the_shapes_the_old_keys_got_wrong(url: str) -> None:
    assert surt(url) == oracle(url)
