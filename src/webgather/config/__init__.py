"""Typed, layered, frozen crawl configuration.

One place holds every default (the dataclasses of :mod:`webgather.config.sections`,
one docstring per field). Precedence is data, lowest first: defaults < TOML file <
``WEBGATHER_*`` environment < command line (:data:`PRECEDENCE`). Values are validated
when loaded (:mod:`webgather.config.checks`) and the result is frozen before the crawl
starts. Limits carry their unit in their name (``_s`` seconds, ``_bytes``).

A TOML file mirrors the sections: ``[fetch] concurrency = 256``. An environment
variable names section and field: ``WEBGATHER_FETCH__CONCURRENCY=256``.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from webgather.config.checks import validate
from webgather.config.sections import (
    DEFAULT_USER_AGENT, ClusterConfig, CrawlConfig, FetchConfig, FrontierConfig, HooksConfig, ParseConfig,
    PolitenessConfig, RecrawlConfig, RenderConfig, RobotsConfig, ScopeConfig, StoreConfig,
)
from webgather.config.sections import ProxyRule
from webgather.errors import ConfigError

__all__ = [
    "DEFAULT_USER_AGENT",
    "PRECEDENCE",
    "REDIS_URL_ENV",
    "ClusterConfig",
    "CrawlConfig",
    "FetchConfig",
    "FrontierConfig",
    "HooksConfig",
    "ParseConfig",
    "PolitenessConfig",
    "ProxyRule",
    "RecrawlConfig",
    "RenderConfig",
    "RobotsConfig",
    "ScopeConfig",
    "StoreConfig",
    "layers",
    "load",
    "native_parse_wanted",
    "to_toml",
]

PRECEDENCE = ("defaults", "file", "env", "cli")

LINE_LISTS = frozenset({"scope.include", "scope.exclude", "scope.include_surt", "scope.exclude_surt"})
"""Lists whose items contain commas (regexes, SURT prefixes): given as one string (a variable), one item per line."""

ALIASES = {"hooks": "hooks.module"}
"""Older spellings of a setting: ``hooks = "pkg.mod"`` (top level, ``WEBGATHER_HOOKS``) names the hooks module."""

REDIS_URL_ENV = "WEBGATHER_REDIS_URL"
"""A cluster crawl's Redis URL (it may hold a password, so it stays out of argv): not a setting."""
NATIVE_ENV = "WEBGATHER_NATIVE"
"""``0`` turns the optional C extensions off: parsing takes the pure-Python link path
(webgather.parse.native) and the WARC writer its Python SHA-1 digests (webgather.store.pagerecords).
Not a setting."""


def native_parse_wanted() -> bool:
    """False when ``WEBGATHER_NATIVE=0`` asks for the pure-Python paths. Read here, the
    package's one reader of the environment, so that ``webgather.parse`` stays free of IO."""
    return os.environ.get(NATIVE_ENV, "1").strip() != "0"


def load(
    file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cli: Mapping[str, Any] | None = None,
) -> CrawlConfig:
    """Merge the layers of :data:`PRECEDENCE` into one validated, frozen config.

    ``cli`` maps dotted names (``"fetch.concurrency"``) or top-level names to
    values; ``None`` values mean "not given" and are skipped.
    """
    merged: dict[str, Any] = {}
    for _source, layer in layers(file, env, cli):
        merged.update(layer)
    config: CrawlConfig = _build(CrawlConfig, merged, "")
    validate(config, _allowed_cpus())
    return config


def _allowed_cpus() -> int | None:
    """CPUs this process may run on (``pin_cpu`` indexes them), None where the OS does not say."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def layers(
    file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    cli: Mapping[str, Any] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """The layers above the defaults, lowest first, as (source of :data:`PRECEDENCE`, dotted name -> raw value)."""
    found: list[tuple[str, dict[str, Any]]] = []
    if file is not None:
        found.append(("file", _flatten(_read_toml(Path(file)))))
    found.append(("env", _from_env(os.environ if env is None else env)))
    found.append(("cli", {k: v for k, v in (cli or {}).items() if v is not None}))
    return [(source, {ALIASES.get(k, k): v for k, v in layer.items()}) for source, layer in found]


def to_toml(config: CrawlConfig) -> str:
    """The config as a TOML file that :func:`load` reads back to an equal config."""
    top: list[str] = []
    sections: list[str] = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            body = [_toml_line(g.name, getattr(value, g.name)) for g in dataclasses.fields(value)]
            sections.append(f"[{f.name}]\n" + "".join(line for line in body if line))
        else:
            top.append(_toml_line(f.name, value))
    return "".join(line for line in top if line) + "\n" + "\n".join(sections)


def _toml_line(name: str, value: Any) -> str:
    if value is None:
        return ""  # absent means the default None
    if isinstance(value, bool):
        return f"{name} = {'true' if value else 'false'}\n"
    if isinstance(value, (int, float)):
        return f"{name} = {value!r}\n"
    if isinstance(value, tuple):
        return f"{name} = [{', '.join(_toml_item(v) for v in value)}]\n"
    return f"{name} = {_toml_string(str(value))}\n"


def _toml_item(value: Any) -> str:
    """A list item: a string, or an inline table for a record (``{pattern = "...", proxy = "..."}``)."""
    if dataclasses.is_dataclass(value):
        pairs = (f"{f.name} = {_toml_string(str(getattr(value, f.name)))}" for f in dataclasses.fields(value))
        return "{" + ", ".join(pairs) + "}"
    return _toml_string(str(value))


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}".replace("-", "_")
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    prefix = "WEBGATHER_"
    return {
        key[len(prefix) :].lower().replace("__", "."): value
        for key, value in env.items()
        if key.startswith(prefix) and key not in (REDIS_URL_ENV, NATIVE_ENV)
    }


def _build(cls: type[Any], values: dict[str, Any], prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    known = set()
    for f in dataclasses.fields(cls):
        name = prefix + f.name
        known.add(name)
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            kwargs[f.name] = _build(hint, values, name + ".")  # type: ignore[arg-type]
        elif name in values:
            kwargs[f.name] = _coerce(name, values[name], hint)
    if not prefix:
        unknown = [k for k in values if not _is_known(k, cls)]
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    return cls(**kwargs)


def _is_known(name: str, cls: type[Any]) -> bool:
    head, _, rest = name.partition(".")
    hints = typing.get_type_hints(cls)
    if head not in hints:
        return False
    hint = hints[head]
    if rest:
        return dataclasses.is_dataclass(hint) and _is_known(rest, hint)  # type: ignore[arg-type]
    return not dataclasses.is_dataclass(hint)


def _coerce(name: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("", "none")):
            if type(None) in args:
                return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(name, value, inner[0])
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{name}: {value!r} is not one of {', '.join(map(str, args))}")
        return value
    if origin is tuple:
        items = value.split("\n" if name in LINE_LISTS else ",") if isinstance(value, str) else list(value)
        if args and dataclasses.is_dataclass(args[0]):
            return tuple(_record(name, args[0], item) for item in items if not isinstance(item, str) or item.strip())
        return tuple(str(i).strip() for i in items if str(i).strip())
    return _coerce_scalar(name, value, hint)


def _record(name: str, cls: Any, item: Any) -> Any:
    """A list item of records: a table (TOML, a stored definition) or "VALUE VALUE" by field order."""
    names = [f.name for f in dataclasses.fields(cls)]
    if isinstance(item, Mapping):
        fields = {str(k).replace("-", "_"): v for k, v in item.items()}
    elif isinstance(item, str) and len(item.split()) == len(names):
        fields = dict(zip(names, item.split(), strict=True))
    elif isinstance(item, cls):
        return item
    else:
        raise ConfigError(f"{name}: {item!r} is not {{{', '.join(names)}}} nor \"{' '.join(n.upper() for n in names)}\"")
    if sorted(fields) != sorted(names) or not all(isinstance(v, str) for v in fields.values()):
        raise ConfigError(f"{name}: {item!r} must give exactly {', '.join(names)} (as strings)")
    return cls(**fields)


def _coerce_scalar(name: str, value: Any, hint: Any) -> Any:
    try:
        if hint is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if hint is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return hint(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: {value!r} is not a valid {hint.__name__}") from None
