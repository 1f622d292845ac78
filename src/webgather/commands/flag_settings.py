"""Which flag sets which setting, and the defaults every ``--help`` shows.

A crawl flag's default lives in the config dataclasses (:mod:`webgather.config.sections`):
its argparse default is None ("not given", so a file or the environment can set it), and
its help shows the dataclass default, never a literal copy (other options' argparse
defaults: :mod:`webgather.cli`). :func:`with_flag` makes a setting's range error name the flag it came from.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from typing import Any

from webgather.config.reference import plain_text, settings

__all__ = ["FLAG_SETTINGS", "flag_of", "show_setting_defaults", "with_flag"]

FLAG_SETTINGS: dict[str, str] = {
    "--out": "out_dir", "--resolve": "fetch.resolve_file", "--max-pages": "max_pages",
    "--delay": "politeness.min_delay_s", "--concurrency": "fetch.concurrency",
    "--per-ip": "politeness.per_ip_connections", "--scope": "scope.mode", "--domain": "scope.domains",
    "--max-depth": "scope.max_depth", "--max-pages-per-host": "scope.max_pages_per_host",
    "--max-url-length": "scope.max_url_length", "--max-repeated-segments": "scope.max_repeated_segments",
    "--user-agent": "fetch.user_agent", "--ignore-robots": "robots.obey", "--no-progress": "progress",
    "--pin-cpu": "pin_cpu", "--allow-address": "fetch.allow_addresses", "--source-address": "fetch.source_address",
    "--cycle": "recrawl.cycle_s", "--policy": "recrawl.policy", "--budget": "recrawl.budget_per_cycle",
    "--new-share": "recrawl.new_url_share", "--no-conditional": "recrawl.conditional_get",
    "--no-dedup": "recrawl.dedup", "--buckets": "cluster.n_buckets", "--partition-by": "cluster.partition_by",
    "--gnp-landmark": "cluster.gnp_landmarks", "--gnp-k": "cluster.gnp_k", "--shared-store": "cluster.shared_store",
    "--metrics": "metrics", "--proxy": "fetch.proxy", "--proxy-rule": "fetch.proxy_rules",
    "--include": "scope.include", "--exclude": "scope.exclude", "--include-surt": "scope.include_surt",
    "--exclude-surt": "scope.exclude_surt", "--strip-param": "scope.strip_query_params",
    "--hooks": "hooks.module", "--items": "hooks.items", "--render": "render.include",
    "--render-surt": "render.include_surt", "--no-requisites": "scope.requisites",
}
"""The flags of ``crawl`` and ``recrawl`` (:mod:`webgather.commands.options`) and the setting each sets."""

_MARKS = ("(default", "(sets ")
"""What the help of a flag says once its default is shown (``webgather.cli`` shows the other options')."""


def flag_of(key: str) -> str | None:
    """The crawl flag that sets ``key``, if one does."""
    return next((flag for flag, k in FLAG_SETTINGS.items() if k == key), None)


def _append(action: argparse.Action, text: str) -> None:
    escaped = text.replace("%", "%%")  # argparse %-formats help strings
    action.help = f"{action.help} {escaped}" if action.help else escaped


def _annotated(action: argparse.Action) -> bool:
    return action.help == argparse.SUPPRESS or any(mark in (action.help or "") for mark in _MARKS)


def show_setting_defaults(parser: argparse.ArgumentParser) -> None:
    """Append each crawl flag's setting and its dataclass default to its help (once)."""
    known = {s.key: s for s in settings()}
    defaults = {key: s.default for key, s in known.items()}
    for action in parser._actions:
        key = next((FLAG_SETTINGS[f] for f in action.option_strings if f in FLAG_SETTINGS), None)
        if key is None or _annotated(action):
            continue
        if action.help is None:  # the setting's own doc, rather than nothing
            action.help = known[key].doc.replace("%", "%%")
        if action.nargs == 0:  # a switch: its absence is the default
            _append(action, f"(sets {key} to {plain_text(not defaults[key])})")
        else:
            _append(action, f"(default: {plain_text(defaults[key])}; setting {key})")


def with_flag(message: str, given: Mapping[str, Any]) -> str:
    """``message`` (a setting's range error) naming the flag that set the setting, if one did."""
    for flag, key in FLAG_SETTINGS.items():
        section, _, name = key.rpartition(".")
        if given.get(key) is None or not message.startswith(section):
            continue
        if re.search(rf"(?<![\w.]){re.escape(name)}\b", message.removeprefix(f"{section}.")):
            return f"{message} (set by {flag})"
    return message
