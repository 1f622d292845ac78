"""Shared test configuration. Tests talk only to servers they start on 127.0.0.0/8."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from webgather.logs import reset

_PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fetcher honours HTTP_PROXY and the like (webgather.fetch.proxy): a CI runner's proxy must not
    carry the tests' loopback requests. Tests of that behaviour pass their own environment."""
    for name in list(os.environ):
        if name.lower() in _PROXY_VARIABLES or name == "WEBGATHER_FETCH__PROXY":
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _logging_unconfigured() -> Iterator[None]:
    """A test that runs ``cli.main`` configures logging (webgather.logs); the next one starts without it."""
    yield
    reset()
