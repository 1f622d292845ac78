"""Values that move through the frontier. Pure; no logic beyond construction."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CrawlItem"]


@dataclass(frozen=True, slots=True)
class CrawlItem:
    """One URL waiting to be fetched (or being fetched) by its owning node."""

    url: str
    """Canonical URL."""
    fp: int
    """``webgather.urls.fingerprint(url)``."""
    depth: int = 0
    """Link hops from a seed (redirects keep the depth of their source)."""
    redirects: int = 0
    """Redirect hops that led here (0 unless this URL is a redirect target)."""
    attempt: int = 0
    """Failed attempts so far (transient errors re-queue with attempt + 1)."""
    priority: float = 0.0
    """Lower is sooner; breadth-first uses the depth, OPIC the negated cash."""
    kind: str = "page"
    """"page", or "sitemap" for sitemap documents (parsed for URLs, not links)."""
