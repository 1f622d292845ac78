"""Size budgets and strict typing of src/webgather, checked on every run (layering: test_layers.py)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import webgather

SRC = Path(webgather.__file__).parent
# A module is one job: this catches a module that has grown a second one, not a long single job
# (a protocol's state machine, a config reference); split where the job splits, never to get under it.
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 40

def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_modules_and_functions_stay_small() -> None:
    too_big, too_long = [], []
    for path in _modules():
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            too_big.append(f"{path.relative_to(SRC)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({length} lines)")
    assert too_big == [] and too_long == []


def test_source_passes_mypy_strict() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(SRC)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:]


def test_test_helpers_have_unique_names() -> None:
    # pytest puts every test directory on sys.path: two helpers with one name shadow each other
    tests = Path(__file__).resolve().parents[1]
    names: dict[str, list[str]] = {}
    for path in tests.rglob("*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(tests)))
    shared = {n: p for n, p in names.items() if len(p) > 1 and n not in {"__init__.py", "conftest.py"}}
    assert shared == {}
