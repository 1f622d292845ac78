"""Where a command's Redis URL comes from: ``--redis URL``, ``--redis @PATH``, ``--redis-file PATH``
or the ``WEBGATHER_REDIS_URL`` environment variable.

A URL with a password on the command line is visible to every user of the
machine (``ps``), so the file and environment forms keep it out of argv; the
``--workers`` parent hands it to its workers in their environment too
(:func:`webgather.runtime.launch.workers.worker_env`). Errors never print the URL.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from webgather.config import REDIS_URL_ENV
from webgather.errors import ConfigError

__all__ = ["add_crawl_in_redis_options", "add_redis_file_option", "resolve_redis_url"]


def add_redis_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis-file", default=None, metavar="PATH",
                        help=f"read the Redis URL from this file (keeps a password out of ps; or set {REDIS_URL_ENV})")


def add_crawl_in_redis_options(parser: argparse.ArgumentParser) -> None:
    """``--redis URL|@FILE``, ``--redis-file PATH`` and ``--crawl NAME``: a command that looks at a
    crawl in Redis (``cluster status``, ``status serve``)."""
    parser.add_argument("--redis", default=None, help="Redis URL of the crawl, or @FILE holding it (default: "
                        f"{REDIS_URL_ENV})")
    add_redis_file_option(parser)
    parser.add_argument("--crawl", required=True, help="name of the crawl")


def resolve_redis_url(args: argparse.Namespace, *, use_env: bool, env: Mapping[str, str] | None = None) -> str | None:
    """The Redis URL the options give, else (``use_env``) the environment's, else None.

    Sets ``args.redis`` to it as well, so the rest of the command reads one field.
    """
    given, path = getattr(args, "redis", None), getattr(args, "redis_file", None)
    if given is not None and path is not None:
        raise ConfigError("give the Redis URL once: --redis or --redis-file")
    if given is not None and given.startswith("@"):
        path = given[1:]
    if path is not None:
        url: str | None = _read_url(Path(path))
    elif given is not None:
        url = given
    elif use_env:
        url = (os.environ if env is None else env).get(REDIS_URL_ENV) or None
    else:
        url = None
    args.redis = url
    return url


def _read_url(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the Redis URL file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if len(lines) != 1:
        raise ConfigError(f"the Redis URL file {path} must hold exactly one URL line, it holds {len(lines)}")
    return lines[0]
