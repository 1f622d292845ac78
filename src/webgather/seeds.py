"""Seeds: command-line URLs and ``@file`` lists -> canonical URLs. Pure but for reading files.

A seed that is not a crawlable URL is a :class:`~webgather.errors.SeedError`
naming the file and line, so a typo never silently shrinks a crawl. Bare host
names (``example.com``) get ``http://``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from webgather.errors import SeedError
from webgather.urls import canonicalize

__all__ = ["parse_seed", "read_seeds"]


def parse_seed(text: str, where: str = "command line") -> str:
    """Canonical URL of one seed; ``where`` names its origin in the error."""
    raw = text.strip()
    if "://" not in raw:
        raw = "http://" + raw
    url = canonicalize(raw)
    if url is None:
        raise SeedError(f"{where}: {text.strip()!r} is not an http(s) URL")
    return url


def read_seeds(args: Iterable[str]) -> list[str]:
    """Seeds from arguments; ``@path`` reads one seed per line (``#`` starts a comment)."""
    seen: set[str] = set()
    seeds: list[str] = []
    for url in _expand(args):
        if url not in seen:
            seen.add(url)
            seeds.append(url)
    return seeds


def _expand(args: Iterable[str]) -> Iterator[str]:
    for arg in args:
        if arg.startswith("@"):
            yield from _read_file(Path(arg[1:]))
        else:
            yield parse_seed(arg)


def _read_file(path: Path) -> Iterator[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SeedError(f"cannot read seed file {path}: {exc.strerror}") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line:
            yield parse_seed(line, f"{path}:{number}")
