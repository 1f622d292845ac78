"""The cluster's pure modules do no IO; the Redis backend translates errors in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import webgather.cluster

CLUSTER = Path(webgather.cluster.__file__).parent
PURE = ["wire.py", "transport.py", "_common.py", "_redis_scripts.py", "mapping.py"]
IO_NAMES = {"asyncio", "socket", "aiohttp", "httpx", "redis", "subprocess", "time", "os"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id != "open", f"{path.name} calls open()"
    return names


def test_pure_cluster_modules_import_no_io() -> None:
    for name in PURE:
        assert not _imports(CLUSTER / name) & IO_NAMES, name


def test_redis_exceptions_are_caught_in_one_place() -> None:
    tree = ast.parse((CLUSTER / "redis.py").read_text())
    catching = set()
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, ast.ExceptHandler) and node.type is not None and "rex." in ast.unparse(node.type):
                    catching.add(func.name)
    assert catching == {"_translated"}
    for name in ("inprocess.py", "embedded.py", *PURE):
        assert "redis.exceptions" not in (CLUSTER / name).read_text()
