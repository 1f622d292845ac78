"""retry (transient results, Retry-After) and redirects (redirect_target). Pure."""

from __future__ import annotations

import ast
from email.utils import formatdate
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webgather.fetch import redirects, retry
from webgather.fetch.model import FetchResult
from webgather.fetch.redirects import redirect_target
from webgather.fetch.retry import is_transient, parse_retry_after, retry_after_s, should_retry

NOW = 1_700_000_000.0


def result(status: int | None = None, error: str | None = None, **headers: str) -> FetchResult:
    pairs = tuple((k.replace("_", "-"), v) for k, v in headers.items())
    return FetchResult("http://a.test/dir/page?x=1", NOW, 0.1, status=status, error=error, response_headers=pairs)


@pytest.mark.parametrize(
    ("status", "error", "transient"),
    [
        (None, "timeout", True), (None, "reset", True), (200, "truncated", True), (None, "connect", True),
        (500, None, True), (502, None, True), (503, None, True), (429, None, True),
        (200, None, False), (404, None, False), (403, None, False), (301, None, False),
        (None, "dns", False), (200, "too_large", False), (200, "bomb", False),
        (None, "protocol", False), (None, "invalid_url", False),
    ],
)  # fmt: skip
def test_transient_kinds(status: int | None, error: str | None, transient: bool) -> None:
    r = result(status, error)
    assert is_transient(r) is transient
    assert should_retry(r, 0, 2) is transient


def test_attempts_are_bounded() -> None:
    r = result(503)
    assert [should_retry(r, a, 2) for a in range(4)] == [True, True, False, False]
    assert not should_retry(r, 0, 0)


def test_retry_after_seconds_and_dates() -> None:
    assert retry_after_s(result(429, Retry_After="120"), NOW) == 120.0
    assert retry_after_s(result(503, Retry_After=" 0 "), NOW) == 0.0
    date = formatdate(NOW + 90, usegmt=True)
    assert retry_after_s(result(503, Retry_After=date), NOW) == pytest.approx(90.0)
    past = formatdate(NOW - 500, usegmt=True)
    assert retry_after_s(result(503, Retry_After=past), NOW) == 0.0
    assert retry_after_s(result(429, Retry_After="99999999"), NOW) == 3600.0
    assert retry_after_s(result(429, Retry_After="99999999"), NOW, max_s=60.0) == 60.0


def test_retry_after_only_where_it_means_wait() -> None:
    assert retry_after_s(result(500, Retry_After="10"), NOW) is None
    assert retry_after_s(result(301, Retry_After="10"), NOW) is None
    assert retry_after_s(result(429), NOW) is None
    assert retry_after_s(result(None, "timeout"), NOW) is None


@pytest.mark.parametrize("value", ["soon", "-5", "1.5", "", "Mon, 99 Foo 2020 25:61:00 GMT", "١٢"])
def test_unreadable_retry_after_is_absent(value: str) -> None:
    assert parse_retry_after(value, NOW) is None


@given(st.text(max_size=60), st.floats(min_value=0, max_value=4e9))
def test_retry_after_never_raises_and_is_clamped(value: str, now: float) -> None:
    got = parse_retry_after(value, now, max_s=100.0)
    assert got is None or 0.0 <= got <= 100.0


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_target_resolves_and_canonicalizes(status: int) -> None:
    r = result(status, Location="../other/./p%7e?q#frag")
    assert redirect_target(r) == "http://a.test/other/p~?q"


def test_redirect_target_absolute_and_cross_host() -> None:
    assert redirect_target(result(302, Location="HTTPS://B.test:443/x")) == "https://b.test/x"


@pytest.mark.parametrize(
    "r",
    [
        result(200, Location="/x"), result(300, Location="/x"), result(304, Location="/x"),
        result(302), result(302, Location="   "), result(301, Location="mailto:x@y.z"),
        result(301, Location="http://[bad"), result(None, "timeout"),
    ],
)  # fmt: skip
def test_no_redirect_target(r: FetchResult) -> None:
    assert redirect_target(r) is None


def test_non_utf8_location_bytes_are_percent_encoded() -> None:
    location = b"/caf\xe9?q=\xff".decode("utf-8", "surrogateescape")  # as the fetcher stores it
    assert redirect_target(result(302, Location=location)) == "http://a.test/caf%E9?q=%FF"
    assert redirect_target(result(302, Location="/café")) == "http://a.test/caf%C3%A9"


@pytest.mark.parametrize("module", [retry, redirects])
def test_policy_modules_are_pure(module: object) -> None:
    tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = {a.name for a in node.names} if isinstance(node, ast.Import) else {node.module or ""}
            assert not {n.split(".")[0] for n in names} & {"asyncio", "socket", "aiohttp", "time"}
