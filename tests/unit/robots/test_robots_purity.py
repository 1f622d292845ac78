"""parse/ and robots/ are pure: no IO libraries, no open(), no clock, no global randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import webgather

SRC = Path(webgather.__file__).parent
FORBIDDEN_IMPORTS = {"asyncio", "socket", "aiohttp", "httpx", "redis", "time", "random", "os", "pathlib"}
FORBIDDEN_CALLS = {"open", "print", "input"}


def _violations(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {(node.module or "").split(".")[0]}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            names = {node.func.id} & FORBIDDEN_CALLS
            found += [f"{path.name}: calls {name}()" for name in names]
            continue
        else:
            continue
        found += [f"{path.name}: imports {name}" for name in names & FORBIDDEN_IMPORTS]
    return found


def test_parse_and_robots_modules_are_pure() -> None:
    paths = sorted((SRC / "parse").glob("*.py")) + sorted((SRC / "robots").glob("*.py"))
    assert len(paths) >= 6
    assert [v for path in paths for v in _violations(path)] == []


def test_the_checker_catches_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import time\nfrom asyncio import sleep\nopen('x')\n")
    assert sorted(_violations(bad)) == ["bad.py: calls open()", "bad.py: imports asyncio", "bad.py: imports time"]
