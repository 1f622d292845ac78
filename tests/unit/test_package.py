"""The package's shape: docstrings on every subpackage, exports, layering."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import webgather

SRC = Path(webgather.__file__).parent

PURE_MODULES = [
    "webgather.urls",
    "webgather.scope",
    "webgather.cachepolicy",
    "webgather.linkgraph",
    "webgather.recrawl.estimate",
    "webgather.recrawl.policy",
    "webgather.recrawl.simhash",
    "webgather.recrawl.observe",
    "webgather.recrawl.rows",
]
IO_NAMES = {"asyncio", "socket", "aiohttp", "httpx", "redis", "sqlite3", "time", "os", "random"}
ALLOWED = {"webgather.cachepolicy": {"random"}}
"""cachepolicy builds random.Random only from a seed it is given (injected randomness)."""


def _subpackages() -> list[str]:
    return [
        m.name
        for m in pkgutil.walk_packages([str(SRC)], prefix="webgather.")
        if m.ispkg
    ]


def test_every_subpackage_documents_its_data_flow() -> None:
    for name in _subpackages():
        module = importlib.import_module(name)
        assert module.__doc__ and module.__doc__.strip(), f"{name} has no docstring"


def test_public_names_match_all() -> None:
    public = sorted(
        n for n in dir(webgather)
        if not n.startswith("_") and n != "annotations" and not inspect.ismodule(getattr(webgather, n))
    )
    assert sorted(webgather.__all__) == sorted(public + ["__version__"])


def test_pure_modules_do_no_io() -> None:
    for name in PURE_MODULES:
        path = SRC.joinpath(*name.split(".")[1:]).with_suffix(".py")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                raise AssertionError(f"{name} calls open()")
            else:
                continue
            forbidden = names & (IO_NAMES - ALLOWED.get(name, set()))
            assert not forbidden, f"{name} imports {forbidden}"


def test_py_typed_is_shipped() -> None:
    assert (SRC / "py.typed").exists()
