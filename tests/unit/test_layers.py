"""The package's layers and its freedom from import cycles, checked by import-linter on every run.

The contracts live in pyproject.toml (``[tool.importlinter]``): one ``layers`` contract over
every top-level part of webgather (a layer imports only layers below it; siblings joined by
``|`` import none of each other) and one ``acyclic_siblings`` contract (no import cycle
between the modules of any package). grimp reads ``import x`` and ``from x import y`` alike,
at module level and inside functions.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import webgather

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(webgather.__file__).parent


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_import_linter_contracts_are_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "3 kept, 0 broken" in done.stdout


def _layered_names(container: str) -> set[str]:
    contract = next(c for c in _contracts() if c["type"] == "layers" and c["containers"] == [container])
    layers = contract["layers"]
    assert isinstance(layers, list)
    return {name.strip() for layer in layers for name in str(layer).split("|")}


def _parts(package: Path) -> set[str]:
    return {p.stem for p in package.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }


def test_every_part_of_the_package_is_in_a_layer() -> None:
    named, parts = _layered_names("webgather"), _parts(SRC)
    assert parts - named == set(), "parts of webgather outside every layer"
    assert named - parts == set(), "layers naming no part of webgather"


def test_every_runtime_module_is_in_a_layered_subpackage() -> None:
    """The runtime is split by job: no module sits loose in it, every subpackage is a layer."""
    runtime = SRC / "runtime"
    named, parts = _layered_names("webgather.runtime"), _parts(runtime)
    assert {p.stem for p in runtime.glob("*.py")} == {"__init__"}, "a module loose in runtime/"
    assert parts == named, "runtime subpackages and the runtime's layers differ"
    for sub in parts:
        doc = (runtime / sub / "__init__.py").read_text()
        assert doc.startswith('"""') and len(doc) > 80, f"runtime/{sub} has no docstring saying its job"
