"""Seeds: command-line URLs and ``@file`` lists -> canonical URLs. Pure but for reading files.

A seed that is not a crawlable URL is a :class:`~webgather.errors.SeedError`
naming the file and line, so a typo never silently shrinks a crawl. Bare host
names (``example.com``) get ``http://``.

A typo must not pass for a seed either: ``http//not a url`` would become
``http://http//not%20a%20url`` and ``example`` ``http://example/``, and the crawl
would end "finished" after a DNS lookup of a name nobody meant. So a seed's host
must be a dotted name or an IP literal, unless ``allow_bare_hosts`` (for
``localhost`` and intranet names), and a seed without a scheme must not hold
``//`` (a mistyped scheme).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from webgather.errors import SeedError
from webgather.urls import canonicalize, hostname

__all__ = ["parse_seed", "read_seeds"]


def parse_seed(text: str, where: str = "command line", *, allow_bare_hosts: bool = False) -> str:
    """Canonical URL of one seed; ``where`` names its origin in the error."""
    raw = text.strip()
    if "://" not in raw:
        if "//" in raw:
            raise SeedError(f"{where}: {raw!r} is not a URL (a mistyped scheme? write http://...)")
        raw = "http://" + raw
    url = canonicalize(raw)
    if url is None:
        raise SeedError(f"{where}: {text.strip()!r} is not an http(s) URL")
    if not allow_bare_hosts and not _dotted_or_literal(hostname(url)):
        raise SeedError(f"{where}: {text.strip()!r} has host {hostname(url)!r}, neither a dotted name nor an IP "
                        "address (a typo? --allow-bare-hosts crawls such names)")
    return url


def _dotted_or_literal(host: str) -> bool:
    if host.startswith("["):  # the canonical form brackets IPv6 and only IPv6
        return True
    labels = host.rstrip(".").split(".")
    return len(labels) >= 2 and all(labels)


def read_seeds(args: Iterable[str], *, allow_bare_hosts: bool = False) -> list[str]:
    """Seeds from arguments; ``@path`` reads one seed per line (``#`` starts a comment)."""
    seen: set[str] = set()
    seeds: list[str] = []
    for url in _expand(args, allow_bare_hosts):
        if url not in seen:
            seen.add(url)
            seeds.append(url)
    return seeds


def _expand(args: Iterable[str], allow_bare_hosts: bool) -> Iterator[str]:
    for arg in args:
        if arg.startswith("@"):
            yield from _read_file(Path(arg[1:]), allow_bare_hosts)
        else:
            yield parse_seed(arg, allow_bare_hosts=allow_bare_hosts)


def _read_file(path: Path, allow_bare_hosts: bool) -> Iterator[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SeedError(f"cannot read seed file {path}: {exc.strerror}") from exc
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line:
            yield parse_seed(line, f"{path}:{number}", allow_bare_hosts=allow_bare_hosts)
