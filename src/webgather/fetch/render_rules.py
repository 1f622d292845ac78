"""Which pages are rendered in the browser, and what a rendering page may load. Pure.

:class:`RenderRules` is built from ``[render]`` (:class:`~webgather.config.RenderConfig`): a page is
rendered when its canonical URL matches one of the ``include`` regexes or ``include_surt`` prefixes
(the same matching as ``[scope]``'s include rules, :mod:`webgather.scope_rules`). The crawler and the
synthetic web's closure (:mod:`webgather.testweb.closure`) ask the same object.

:func:`request_action` decides about each request the browser makes while it renders a page. The
browser itself never goes to the network: the page's own document is served from the bytes the
crawler fetched (never fetched twice), scripts and XHR/fetch calls go through the crawler's HTTP
client (its resolver, address guard and limits), everything else (images, style, fonts, frames,
media, further navigations) is aborted: only the DOM is wanted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webgather.config import RenderConfig
from webgather.scope_rules import UrlRules

__all__ = ["FETCHED_TYPES", "RenderRules", "RequestAction", "request_action"]

RequestAction = Literal["document", "fetch", "abort"]
FETCHED_TYPES = frozenset({"script", "xhr", "fetch"})
"""Playwright resource types a page may load (through the crawler): what builds a DOM."""


@dataclass(frozen=True, slots=True)
class RenderRules:
    rules: UrlRules

    @classmethod
    def of(cls, config: RenderConfig) -> RenderRules:
        """The compiled rules (:class:`~webgather.errors.ConfigError` names ``render.<setting>``)."""
        return cls(UrlRules.of(config.include, (), config.include_surt, (), section="render"))

    @property
    def active(self) -> bool:
        """Any rule is given (else nothing is rendered and no browser is needed)."""
        return self.rules.filters

    def matches(self, url: str) -> bool:
        """Canonical ``url`` is to be rendered."""
        return self.rules.filters and not self.rules.excluded(url)


def request_action(resource_type: str, *, main_frame_navigation: bool, document_served: bool,
                   subresources_used: int, max_subresources: int) -> RequestAction:
    """What the browser's request gets: the fetched document, a fetch through the crawler, or abort.

    ``main_frame_navigation``: the request navigates the page's main frame; only the first one is the
    page itself (``document_served`` False), a later one (a script setting ``location``) is aborted."""
    if main_frame_navigation:
        return "abort" if document_served else "document"
    if resource_type in FETCHED_TYPES and subresources_used < max_subresources:
        return "fetch"
    return "abort"
