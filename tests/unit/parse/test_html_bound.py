"""The prefix of a large HTML page that is parsed (webgather.parse.html_bound)."""

from __future__ import annotations

import random

import pytest

from webgather.parse.html_bound import WINDOW, html_prefix_length


def test_a_page_within_both_bounds_is_parsed_whole() -> None:
    body = b"<p>x" * 10
    assert html_prefix_length(body, len(body), 10) == len(body)
    assert html_prefix_length(b"", 1, 1) == 0


def test_past_the_tag_bound_the_cut_falls_before_the_first_tag_over_it() -> None:
    body = b"<p>x" * 10
    assert html_prefix_length(body, 1000, 9) == 36  # before the 10th "<"
    assert html_prefix_length(body, 1000, 1) == 4
    cut = html_prefix_length(body, 1000, 3)
    assert body[:cut].count(b"<") == 3 and body[cut:cut + 1] == b"<"


def test_past_the_byte_bound_the_cut_falls_before_the_last_tag_within_it() -> None:
    body = b"<a href=/x>" + b"y" * 100 + b"<b>" + b"z" * 100
    assert html_prefix_length(body, 150, 100) == 111  # "<b>" starts at 111: not split
    assert html_prefix_length(b"t" * 500, 100, 10) == 100  # no "<" at all: at the bound
    assert html_prefix_length(b"<" + b"t" * 500, 100, 10) == 100  # only one at 0: at the bound, not empty


@pytest.mark.parametrize("seed", range(5))
def test_the_cut_matches_a_plain_count_across_windows(seed: int) -> None:
    rng = random.Random(seed)
    body = bytes(rng.choice(b"<<<ab>") for _ in range(3 * WINDOW + 17))
    tags = rng.randrange(1, body.count(b"<"))
    cut = html_prefix_length(body, len(body), tags)
    assert body[:cut].count(b"<") == tags and body[cut] == ord("<")
    max_bytes = rng.randrange(WINDOW, len(body))
    cut = html_prefix_length(body, max_bytes, len(body))
    assert cut == body.rfind(b"<", 0, max_bytes)
