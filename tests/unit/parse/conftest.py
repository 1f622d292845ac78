"""The ``link_core`` fixture: a parse test runs on the pure-Python link path and on the C one."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from webgather.parse import native


@pytest.fixture(params=["python", "native"])
def link_core(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "native" and not native.available():
        if os.environ.get("WEBGATHER_NATIVE", "1").strip() == "0":
            pytest.skip("WEBGATHER_NATIVE=0: the C link core was not loaded")
        pytest.fail(f"the C link core did not load: {native.status()} (run scripts/setup)")
    previous = native.core() is not None
    native.use_native(request.param == "native")
    yield request.param
    native.use_native(previous)
