"""A hooks module the node processes of an API crawl with workers import (tests/ is on their PYTHONPATH)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from webgather.runtime.engine.page_hooks import Page


def on_page(page: Page) -> Iterator[dict[str, Any]]:
    yield {"title": page.title, "links": len(page.links), "depth": page.depth}
