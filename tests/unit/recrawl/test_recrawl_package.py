"""The re-crawl's pure core does no IO; its package documents its data flow."""

from __future__ import annotations

import ast
from pathlib import Path

import webgather.recrawl

PURE = ["estimate", "policy", "simhash", "observe"]
IO_NAMES = {"asyncio", "socket", "aiohttp", "httpx", "redis", "sqlite3", "time", "random", "os"}


def test_pure_modules_import_no_io_and_open_nothing() -> None:
    root = Path(webgather.recrawl.__file__).parent
    for name in PURE:
        tree = ast.parse((root / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                raise AssertionError(f"{name} calls open()")
            else:
                continue
            assert not names & IO_NAMES, f"recrawl.{name} imports {names & IO_NAMES}"


def test_package_docstring_names_the_flow() -> None:
    doc = webgather.recrawl.__doc__ or ""
    assert "revisit" in doc and "state" in doc and "policy" in doc
