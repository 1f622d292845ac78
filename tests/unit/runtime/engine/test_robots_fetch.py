"""runtime.engine.robots_fetch.fetch_robots with a fake fetch: cut bodies are parsed from their prefix, redirects."""

from __future__ import annotations

import gzip
import zlib

from webgather.fetch.model import FetchResult
from webgather.robots import ALLOW_ALL
from webgather.runtime.engine.robots_fetch import fetch_robots

UA = "webgather/0.1"
RULES = b"User-agent: *\nDisallow: /private/\n"
FILLER = b"# " + b"x" * 97 + b"\n"
HUGE = RULES + FILLER * (700 * 1024 // len(FILLER))


def cut(raw: bytes, limit: int, error: str = "too_large", encoding: str | None = None) -> FetchResult:
    """What the fetcher returns for a 200 whose body went past one of its limits."""
    headers = (("Content-Encoding", encoding),) if encoding else ()
    return FetchResult("http://h.test/robots.txt", 0.0, 0.0, status=200, response_headers=headers,
                       raw_body=raw[:limit], error=error, truncated=error == "too_large")


async def outcome_of(*answers: FetchResult) -> tuple[object, int]:
    calls: list[str] = []

    async def fetch(url: str) -> FetchResult:
        calls.append(url)
        return answers[min(len(calls), len(answers)) - 1]

    got = await fetch_robots("http://h.test", fetch, UA, 500 * 1024)
    return got.rules, len(calls)


async def test_a_too_large_robots_txt_is_parsed_from_its_prefix() -> None:
    rules, _ = await outcome_of(cut(HUGE, 600 * 1024))
    assert rules is not None and not rules.allowed("http://h.test/private/a")  # type: ignore[attr-defined]
    assert rules.allowed("http://h.test/public")  # type: ignore[attr-defined]


async def test_a_cut_gzip_or_deflate_robots_txt_is_decoded_as_far_as_it_goes() -> None:
    for raw, encoding in ((gzip.compress(HUGE), "gzip"), (zlib.compress(HUGE), "deflate")):
        rules, _ = await outcome_of(cut(raw, len(raw) // 2, encoding=encoding))
        assert rules is not None and not rules.allowed("http://h.test/private/a")  # type: ignore[attr-defined]
    bomb = cut(gzip.compress(HUGE), 10**9, error="bomb", encoding="gzip")
    rules, _ = await outcome_of(bomb)
    assert rules is not None and not rules.allowed("http://h.test/private/a")  # type: ignore[attr-defined]


async def test_a_cut_body_in_an_unknown_coding_or_a_half_line_is_not_obeyed() -> None:
    rules, _ = await outcome_of(cut(HUGE, 1000, encoding="zstd"))
    assert rules is None  # cannot be read: unavailable, retried later
    rules, _ = await outcome_of(cut(RULES, len(RULES) - 5))  # "Disallow: /priv": dropped, not obeyed half-read
    assert rules is not None and rules.allowed("http://h.test/private/a")  # type: ignore[attr-defined]


async def test_more_than_five_redirects_allow_all() -> None:
    moved = FetchResult("http://h.test/robots.txt", 0.0, 0.0, status=301, response_headers=(("Location", "/r"),))
    rules, calls = await outcome_of(moved)
    assert rules is ALLOW_ALL and calls == 6
