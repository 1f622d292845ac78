"""Shared test configuration. Tests talk only to servers they start on 127.0.0.0/8."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from webgather.logs import reset


@pytest.fixture(autouse=True)
def _logging_unconfigured() -> Iterator[None]:
    """A test that runs ``cli.main`` configures logging (webgather.logs); the next one starts without it."""
    yield
    reset()
