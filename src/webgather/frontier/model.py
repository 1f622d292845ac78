"""Values that move through the frontier. Pure; no logic beyond construction."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_REQUISITE_HOPS", "CrawlItem", "requisite_hops", "requisite_kind"]

MAX_REQUISITE_HOPS = 5
_REQUISITE_KINDS = ("requisite",) + tuple(f"requisite{n}" for n in range(2, MAX_REQUISITE_HOPS + 1))


def requisite_kind(hops: int) -> str:
    """The kind of an item ``hops`` requisite hops after a page: "requisite", "requisite2", ..."""
    return _REQUISITE_KINDS[hops - 1]


def requisite_hops(kind: str) -> int:
    """Requisite hops after the last page (0 for a page or sitemap)."""
    if not kind.startswith("requisite"):
        return 0
    return 1 if kind == "requisite" else int(kind[9:])


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
    """"page", "sitemap" for sitemap documents (parsed for URLs, not links), or a requisite of a page
    (:func:`requisite_kind`: its hops after the page are in the kind, like Heritrix's "E" in a hop path)."""
