"""Which pages are rendered ([render] rules) and what a rendering page may load. Pure."""

from __future__ import annotations

import pytest

from webgather.config import RenderConfig, load
from webgather.errors import ConfigError
from webgather.fetch.render_rules import RenderRules, request_action


def test_regex_and_surt_prefix_rules_select_pages() -> None:
    rules = RenderRules.of(RenderConfig(include=(r"/app/",), include_surt=("http://(com,example,shop,)/",)))
    assert rules.active
    assert rules.matches("http://other.org/app/1")
    assert rules.matches("http://shop.example.com/cart")
    assert not rules.matches("http://www.example.com/cart")
    assert not rules.matches("http://other.org/static/1")


def test_no_rule_renders_nothing() -> None:
    rules = RenderRules.of(RenderConfig())
    assert not rules.active and not rules.matches("http://example.com/")


@pytest.mark.parametrize(("setting", "value", "message"), [
    ("render.include", ("(",), "render.include: '('"),
    ("render.timeout_s", 0.0, "render.timeout_s must be > 0"),
    ("render.max_pages", 0, "render.max_pages must be >= 1"),
    ("render.max_subresources", -1, "render.max_subresources must be >= 0"),
])
def test_bad_render_settings_are_one_line_errors(setting: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(None, None, {setting: value})


def test_the_page_itself_is_served_once_then_navigations_are_aborted() -> None:
    first = request_action("document", main_frame_navigation=True, document_served=False,
                           subresources_used=0, max_subresources=4)
    again = request_action("document", main_frame_navigation=True, document_served=True,
                           subresources_used=0, max_subresources=4)
    assert (first, again) == ("document", "abort")


@pytest.mark.parametrize(("kind", "used", "action"), [
    ("script", 0, "fetch"), ("xhr", 3, "fetch"), ("fetch", 0, "fetch"), ("script", 4, "abort"),
    ("image", 0, "abort"), ("stylesheet", 0, "abort"), ("font", 0, "abort"), ("document", 0, "abort"),
    ("media", 0, "abort"), ("websocket", 0, "abort"),
])
def test_only_scripts_and_xhr_are_fetched_within_the_budget(kind: str, used: int, action: str) -> None:
    assert request_action(kind, main_frame_navigation=False, document_served=True,
                          subresources_used=used, max_subresources=4) == action
