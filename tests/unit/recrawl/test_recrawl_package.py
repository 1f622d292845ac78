"""The re-crawl package documents its data flow (its pure modules are checked in tests/unit/test_package.py)."""

from __future__ import annotations

import webgather.recrawl


def test_package_docstring_names_the_flow() -> None:
    doc = webgather.recrawl.__doc__ or ""
    assert "revisit" in doc and "state" in doc and "policy" in doc
