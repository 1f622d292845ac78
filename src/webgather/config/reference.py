"""Every setting with its default, type and one-line doc, and where a loaded value came from.

The docs are the field docstrings of :mod:`webgather.config.sections`, read from that
module's source (a string literal under a field is no runtime attribute): there is no
second copy of them to drift. ``webgather config show`` and ``docs/config.md`` are made
from :func:`settings` and :func:`sources`.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webgather.config import layers, sections
from webgather.config.sections import CrawlConfig

__all__ = ["Setting", "env_name", "plain_text", "section_docs", "settings", "sources", "value_of", "value_text"]


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    """Dotted name: ``fetch.concurrency``, or ``max_pages`` for a top-level one."""
    type_text: str
    default: Any
    doc: str
    """The field's docstring on one line ("" if it has none)."""


def env_name(key: str) -> str:
    """The environment variable that sets ``key``: ``WEBGATHER_FETCH__CONCURRENCY``."""
    return "WEBGATHER_" + key.upper().replace(".", "__")


def plain_text(value: Any) -> str:
    """A value as a user types it on a command line: ``1.0``, ``auto``, ``2,4,8``; None and () as ``none``."""
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value)) if value else "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)


def value_text(value: Any) -> str:
    """A value as TOML spells it (None, which TOML lacks, as ``none``: what the loader reads as None)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


@functools.cache
def _class_docs() -> dict[str, tuple[str, dict[str, str]]]:
    """Class name -> (class docstring, field -> docstring), from the source of the sections module."""
    found: dict[str, tuple[str, dict[str, str]]] = {}
    for node in ast.parse(inspect.getsource(sections)).body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, str] = {}
        for field, after in zip(node.body, node.body[1:]):
            if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                fields[field.target.id] = " ".join(after.value.value.split())
        found[node.name] = (" ".join((ast.get_docstring(node) or "").split()), fields)
    return found


def _type_text(hint: Any) -> str:
    """``int``, ``float | None``, ``"bfs" | "opic"``, ``tuple[str, ...]``."""
    if typing.get_origin(hint) is typing.Literal:
        return " | ".join(value_text(v) for v in typing.get_args(hint))
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def section_docs() -> dict[str, str]:
    """Section name ("" for the top level) -> the section class's docstring on one line."""
    hints = typing.get_type_hints(CrawlConfig)
    docs = {"": _class_docs()[CrawlConfig.__name__][0]}
    for f in dataclasses.fields(CrawlConfig):
        if dataclasses.is_dataclass(hints[f.name]):
            docs[f.name] = _class_docs()[typing.cast(type, hints[f.name]).__name__][0]
    return docs


def settings() -> tuple[Setting, ...]:
    """Every setting: the top-level ones first, then each section's, in declaration order."""
    default, hints = CrawlConfig(), typing.get_type_hints(CrawlConfig)
    top: list[Setting] = []
    nested: list[Setting] = []
    for f in dataclasses.fields(CrawlConfig):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            docs, inner = _class_docs()[typing.cast(type, hint).__name__][1], typing.get_type_hints(hint)
            nested += [Setting(f"{f.name}.{g.name}", _type_text(inner[g.name]), getattr(getattr(default, f.name), g.name),
                               docs.get(g.name, "")) for g in dataclasses.fields(getattr(default, f.name))]
        else:
            docs = _class_docs()[CrawlConfig.__name__][1]
            top.append(Setting(f.name, _type_text(hint), getattr(default, f.name), docs.get(f.name, "")))
    return (*top, *nested)


def value_of(config: CrawlConfig, key: str) -> Any:
    """The value of a dotted setting in ``config``."""
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def sources(file: str | None, env: Mapping[str, str] | None, cli: Mapping[str, Any]) -> dict[str, str]:
    """Setting -> the layer its value came from (``file``, ``env`` or ``cli``); absent: the default.

    The same layers :func:`webgather.config.load` merges (call that first: it refuses what is invalid)."""
    found: dict[str, str] = {}
    for source, layer in layers(file, env, cli):
        found.update(dict.fromkeys(layer, source))
    return found
